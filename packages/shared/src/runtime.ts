/** Runtime helpers shared by every process: config loading, HTTP helpers, upstream calls over undici's dispatch, Prometheus text parsing, a seeded PRNG, clocks, structured logs, a hash table keyed by 64-bit chain hashes, growable typed arrays, scripts' command-line options. */
export * from './config.ts';
export * from './http.ts';
export * from './upstream-call.ts';
export * from './auth.ts';
export * from './prometheus.ts';
export * from './random.ts';
export * from './clock.ts';
export * from './log.ts';
export * from './settings.ts';
export * from './hash64.ts';
export * from './grow.ts';
export * from './script-args.ts';
