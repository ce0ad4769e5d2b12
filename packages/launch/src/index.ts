export * from './launch.ts';
export * from './processes.ts';
