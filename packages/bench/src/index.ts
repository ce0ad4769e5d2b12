export * from './scenarios.ts';
export * from './fleet.ts';
export * from './processes.ts';
export * from './loadgen.ts';
export * from './engines.ts';
export * from './report.ts';
export * from './text.ts';
