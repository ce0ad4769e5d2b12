/**
 * A request's description as a router reads it: describeRequest (the shared
 * wire contract) with this router's prefix and work settings and the fleet's
 * model names. The HTTP transport and the discrete-event simulator both
 * describe through it, so they place the same request the same way.
 */
import { describeRequest, type RequestInfo, type RequestKind } from '@warmpath/shared/wire';
import type { RouterConfig } from '../config.ts';

/** The request headers placement reads: the explicit routing key and the client's session id. */
export interface RequestHeaders {
  readonly key?: string | undefined;
  readonly session?: string | undefined;
}

/** describeRequest with a router config's prefix and work settings: the one description both transports use. */
export function describeFor(
  config: Pick<RouterConfig, 'chunkChars' | 'maxChunks' | 'charsPerToken' | 'defaultMaxTokens'>,
  body: Record<string, unknown>,
  kind: RequestKind,
  resolveModel: (name: string) => { model: string; adapter: string } | undefined,
  headers: RequestHeaders,
): RequestInfo {
  return describeRequest(body, kind, {
    chunkChars: config.chunkChars,
    maxChunks: config.maxChunks,
    charsPerToken: config.charsPerToken,
    defaultMaxTokens: config.defaultMaxTokens,
    resolveModel,
    keyHeader: headers.key,
    sessionHeader: headers.session,
  });
}
