/**
 * Structured logs for the long-running commands (router, agent, simulator):
 * pino, one JSON object per line on stderr, with `level` as a word and `time`
 * in ISO 8601, so log pipelines take them as they are.
 *
 * stdout is kept for the one ready line each command prints
 * (`warmpath router ready url=…`), which scripts and the benchmark parse;
 * every log line, the access log included, goes to stderr, as Prometheus and
 * etcd do.
 *
 * Trade-off: writes are asynchronous (pino's sonic-boom, flushed on exit), so
 * a request never waits for stderr; a process killed with SIGKILL may lose
 * its last lines.
 */
import { pino, type Logger } from 'pino';

export type { Logger };

/** `--log-level` values, most severe first; `silent` logs nothing. */
export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

export interface LoggerOptions {
  /** One of LOG_LEVELS. */
  level: string;
  /** The component, in every line's `name`: router, agent, sim. */
  name: string;
  /** Fields on every line (the router's id, the agent's replica). */
  bindings?: Record<string, string>;
  /** Where lines go, one JSON line per call (tests, embedding); default stderr. */
  write?: (line: string) => void;
}

export function createLogger(opts: LoggerOptions): Logger {
  const destination = opts.write !== undefined ? { write: opts.write } : pino.destination({ dest: 2, sync: false });
  const logger = pino(
    {
      level: opts.level,
      name: opts.name,
      timestamp: pino.stdTimeFunctions.isoTime,
      formatters: { level: (label) => ({ level: label }) },
    },
    destination,
  );
  return opts.bindings !== undefined ? logger.child(opts.bindings) : logger;
}
