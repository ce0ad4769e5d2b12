/**
 * Secrets between tiers: files that hold a token (read once at start), the
 * bearer token of a request, and a comparison that takes the same time
 * whatever the guess. The router presents the agents' shared token
 * (`agentToken`) on every call to an agent; the agent presents the engine's
 * key (`engineApiKey`) to its engine.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { ConfigError } from './config.ts';

/** The first non-blank, non-comment line of a secret file; a missing, empty or unreadable file is a ConfigError naming `what`. */
export function readSecret(path: string, what: string): string {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`${what}: cannot read ${path}: ${(err as Error).message}`);
  }
  const line = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .find((l) => l !== '' && !l.startsWith('#'));
  if (line === undefined) throw new ConfigError(`${what}: ${path} holds no token`);
  return line;
}

/** The token of an `Authorization: Bearer …` header, or undefined. */
export function bearerToken(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string' || !/^bearer /i.test(header)) return undefined;
  const token = header.slice(7).trim();
  return token === '' ? undefined : token;
}

const digest = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Does `given` equal `secret`? Compares digests in constant time, so timing tells nothing about the secret. */
export function secretMatches(given: string | undefined, secret: string): boolean {
  return given !== undefined && timingSafeEqual(digest(given), digest(secret));
}
