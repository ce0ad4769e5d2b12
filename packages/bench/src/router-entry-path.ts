import { fileURLToPath } from 'node:url';

/** `warmpath router` with the peers' emulations registered: the live benchmark's routers (router-entry.ts). */
export const ROUTER_ENTRY_PATH = fileURLToPath(new URL('./router-entry.ts', import.meta.url));
