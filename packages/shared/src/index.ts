export * from './errors.ts';
export * from './config.ts';
export * from './prefix.ts';
export * from './ring.ts';
export * from './protocol.ts';
export * from './request.ts';
export * from './http.ts';
export * from './gossip.ts';
