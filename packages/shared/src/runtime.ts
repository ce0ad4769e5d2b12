/** Runtime helpers shared by every process: config loading, bounded HTTP bodies, Prometheus text parsing, a seeded PRNG. */
export * from './config.ts';
export * from './http.ts';
export * from './prometheus.ts';
export * from './random.ts';
