/**
 * The usage tap the agent reads engine responses with; it lives in
 * @warmpath/shared (usage.ts) because the router reads the same usage for
 * per-tenant accounting.
 */
export { UsageTap, usageOf, type Usage } from '@warmpath/shared/wire';
