/**
 * From request text to what the engine model needs: a token count and the
 * chain hashes of the prompt's full KV blocks. No tokenizer: tokens are
 * estimated as characters / charsPerToken, and a block of blockSize tokens is
 * hashed over charsPerToken × blockSize characters, with the shared prefix
 * chain (packages/shared/src/prefix.ts) so sim, agent and router agree.
 */
import { canonicalText, chainHashes, prefixSeed } from '@warmpath/shared/wire';
import type { RequestKind } from '@warmpath/shared/wire';

export interface PromptIdentity {
  readonly promptTokens: number;
  readonly blockHashes: BigUint64Array;
}

export interface PromptOptions {
  readonly model: string;
  /** '' for the base model. */
  readonly adapter: string;
  readonly cacheSalt?: string | undefined;
  readonly charsPerToken: number;
  readonly blockSize: number;
}

export function estimateTokens(text: string, charsPerToken: number): number {
  return Math.max(1, Math.ceil(text.length / charsPerToken));
}

export function promptIdentity(text: string, o: PromptOptions): PromptIdentity {
  const promptTokens = estimateTokens(text, o.charsPerToken);
  const maxBlocks = Math.floor(promptTokens / o.blockSize);
  const blockHashes = chainHashes(
    text,
    o.charsPerToken * o.blockSize,
    prefixSeed(o.model, o.adapter, o.cacheSalt ?? ''),
    maxBlocks,
  );
  return { promptTokens, blockHashes };
}

/** Prompt identity of an OpenAI request body (`chat` or `completion`). */
export function promptIdentityOfBody(
  body: Record<string, unknown>,
  kind: RequestKind,
  o: PromptOptions,
): PromptIdentity & { text: string } {
  const text = canonicalText(body, kind);
  return { text, ...promptIdentity(text, o) };
}
