/**
 * `warmpath sim`: one simulated vLLM replica on a port. The first stdout line
 * is `warmpath sim listening on http://HOST:PORT model=... profile=...`; other
 * packages' tests parse the URL from it. Logs are JSON lines on stderr.
 */
import { configFromProcess, createLogger, helpText, type CommandHelp } from '@warmpath/shared/runtime';
import type { PROFILE_NAMES } from './model/profiles.ts';
import { simSchema } from './server/config.ts';
import type { KvFailurePolicy, Role } from './server/disagg.ts';
import { FAULT_HELP } from './server/faults.ts';
import { startSimServer } from './server/server.ts';

export { simSchema };

export const SIM_HELP: CommandHelp = {
  description:
    "One simulated inference engine that speaks vLLM's HTTP API and /metrics: a calibrated GPU model with paged KV and a prefix cache, continuous batching, chunked prefill, preemption and LoRA slots. Answers with placeholder text. Prints one line on stdout (its URL); logs JSON lines on stderr.",
  more: FAULT_HELP,
  examples: [
    'warmpath sim --port 8000 --profile h100-llama3-8b',
    '# LoRA: two adapters registered, two GPU slots',
    'warmpath sim --adapters sql-lora,chat-lora --max-loras 2',
    '# ten times faster than real time; dies after 30 simulated seconds',
    'warmpath sim --speed 10 --fault crash-after=30s',
    '# a decode worker of a disaggregated fleet (beside one started with --role prefill)',
    'warmpath sim --role decode --port 8200 --kv-link-gbps 400',
  ],
};

export async function run(argv: string[]): Promise<void> {
  const all = argv.includes('--help-all');
  if (all || argv.includes('--help') || argv.includes('-h')) {
    console.log(helpText('sim', simSchema, SIM_HELP, all));
    return;
  }
  const c = configFromProcess('sim', simSchema, argv, SIM_HELP);
  const log = createLogger({ level: c.logLevel, name: 'sim' });
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
    cpuKvTokens: c.cpuKvTokens,
    kvPeers: c.kvPeers,
    schedulingPolicy: c.schedulingPolicy as 'fcfs' | 'priority',
    allowRuntimeLora: c.allowRuntimeLora,
    seed: c.seed,
    role: c.role as Role,
    kvLinkGbps: c.kvLinkGbps,
    kvLinkLatencyMs: c.kvLinkLatencyMs,
    kvTimeoutMs: c.kvTimeoutMs,
    kvLoadFailurePolicy: c.kvLoadFailurePolicy as KvFailurePolicy,
    onCrash: () => {
      log.fatal('injected crash');
      process.exit(1);
    },
  });
  process.stdout.write(
    `warmpath sim listening on ${server.url} model=${server.modelName} profile=${c.profile} speed=${c.speed}\n`,
  );
  log.info({ url: server.url, model: server.modelName, profile: c.profile, speed: c.speed }, 'listening');
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      log.info({ signal }, 'stopping');
      process.off('SIGTERM', stop);
      process.off('SIGINT', stop);
      void server.close().then(resolve);
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
  });
}
