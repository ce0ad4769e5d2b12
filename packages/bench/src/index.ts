export * from './scenarios.ts';
export { KV_SHARING_SETTING, tierRouterSettings } from './tiers.ts';
export * from './loadgen.ts';
export * from './ground-truth.ts';
export * from './report.ts';
export * from './text.ts';
