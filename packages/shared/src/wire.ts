/**
 * The wire contract: what agent and router must agree on byte for byte —
 * prefix identity, request description, the bounded-load ring, the state
 * protocol and the error registry. No I/O libraries: importing this never
 * loads libp2p.
 */
export * from './errors.ts';
export * from './prefix.ts';
export * from './request.ts';
export * from './request-schema.ts';
export * from './ring.ts';
export * from './protocol.ts';
export * from './tracing.ts';
