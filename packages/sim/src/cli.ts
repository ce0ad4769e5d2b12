/**
 * `warmpath sim`: one simulated vLLM replica on a port. The first stdout line
 * is `warmpath sim listening on http://HOST:PORT model=... profile=...`; other
 * packages' tests parse the URL from it.
 */
import { configFromProcess, helpText } from '@warmpath/shared/runtime';
import type { Schema } from '@warmpath/shared/runtime';
import { PROFILE_NAMES } from './model/profiles.ts';
import { FAULT_HELP } from './server/faults.ts';
import { DEFAULT_MODEL, startSimServer } from './server/server.ts';

export const simSchema = {
  port: { type: 'number', default: 8000, min: 0, max: 65535, integer: true, doc: 'TCP port; 0 = chosen by the OS' },
  host: { type: 'string', default: '127.0.0.1', doc: 'address to listen on' },
  profile: { type: 'string', default: 'h100-llama3-8b', choices: PROFILE_NAMES, doc: 'engine profile (KV size, batch limits, step times)' },
  model: { type: 'string', default: DEFAULT_MODEL, doc: 'served base model id' },
  adapters: { type: 'list', default: [], doc: 'LoRA adapters registered at start (comma-separated); turns LoRA on' },
  enableLora: { type: 'boolean', default: false, doc: 'LoRA on without static adapters (load them at runtime)' },
  maxLoras: { type: 'number', default: 1, min: 1, max: 1024, integer: true, doc: 'GPU LoRA slots (vLLM --max-loras)' },
  maxCpuLoras: { type: 'number', default: 4, min: 1, max: 4096, integer: true, doc: 'adapters kept in CPU memory; loads from there are fast' },
  speed: { type: 'number', default: 1, min: 0.001, max: 10000, doc: 'simulated time runs this many times faster than wall time' },
  fault: { type: 'list', default: [], doc: 'fault to inject, repeatable (see below)' },
  charsPerToken: { type: 'number', default: 4, min: 0.5, max: 64, doc: 'characters per token of the token estimate' },
  maxTokensDefault: { type: 'number', default: 16, min: 1, integer: true, doc: 'output tokens when a request sets no max_tokens' },
  bodyLimitBytes: { type: 'number', default: 16 * 1024 * 1024, min: 1024, integer: true, doc: 'largest request body, bytes (16 MiB)' },
  enablePrefixCaching: { type: 'boolean', default: true, doc: 'prefix caching (--no-enable-prefix-caching to turn off)' },
  allowRuntimeLora: { type: 'boolean', default: true, doc: 'serve /v1/load_lora_adapter and /v1/unload_lora_adapter' },
  seed: { type: 'number', default: 1, integer: true, doc: 'seed of the error-rate fault' },
} as const satisfies Schema;

export async function run(argv: string[]): Promise<void> {
  if (argv.includes('--help') || argv.includes('-h')) {
    console.log(`${helpText('sim', simSchema)}\n\n${FAULT_HELP}`);
    return;
  }
  const c = configFromProcess('sim', simSchema, argv);
  const server = await startSimServer({
    port: c.port,
    host: c.host,
    profile: c.profile as (typeof PROFILE_NAMES)[number],
    model: c.model,
    adapters: c.adapters,
    enableLora: c.enableLora,
    maxLoras: c.maxLoras,
    maxCpuLoras: c.maxCpuLoras,
    speed: c.speed,
    faults: c.fault,
    charsPerToken: c.charsPerToken,
    defaultMaxTokens: c.maxTokensDefault,
    bodyLimitBytes: c.bodyLimitBytes,
    enablePrefixCaching: c.enablePrefixCaching,
    allowRuntimeLora: c.allowRuntimeLora,
    seed: c.seed,
    onCrash: () => {
      process.stderr.write('warmpath sim: injected crash\n');
      process.exit(1);
    },
  });
  process.stdout.write(`warmpath sim listening on ${server.url} model=${server.modelName} profile=${c.profile} speed=${c.speed}\n`);
  await new Promise<void>((resolve) => {
    const stop = (): void => {
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      void server.close().then(resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
