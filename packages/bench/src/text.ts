/**
 * Deterministic text. The simulator estimates tokens as characters / 4, so
 * `tokens(n)` of text is 4n characters; the same (id, n) always gives the same
 * text, which is what makes shared prefixes shared.
 */
import { mulberry32 } from '@warmpath/shared/runtime';

export const CHARS_PER_TOKEN = 4;

const VOCAB = (
  'the of and to in is that for it as with was on be by this are from at or an have not which but all they were their one can has ' +
  'model cache token prefix router replica request stream batch kernel memory tensor adapter latency throughput queue decode prefill ' +
  'system user assistant answer question context document report table figure value result method analysis data source'
).split(' ');

/** The workloads' seeded PRNG (shared with the simulator's fault injection). */
export const rng = mulberry32;

/** String seed → 32-bit seed (FNV-1a). */
export function seedOf(s: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

const cache = new Map<string, string>();

/** Deterministic text of about `tokens` tokens (exactly 4 × tokens characters) for `id`. */
export function textOf(id: string, tokens: number): string {
  const key = `${id}|${tokens}`;
  const hit = cache.get(key);
  if (hit !== undefined) return hit;
  const chars = Math.max(0, Math.round(tokens * CHARS_PER_TOKEN));
  const r = rng(seedOf(id));
  const parts: string[] = [`[${id}] `];
  let len = parts[0]!.length;
  while (len < chars) {
    const w = VOCAB[Math.floor(r() * VOCAB.length)]!;
    parts.push(w, ' ');
    len += w.length + 1;
  }
  const out = parts.join('').slice(0, chars);
  if (cache.size > 50_000) cache.clear();
  cache.set(key, out);
  return out;
}

/** Exponential inter-arrival gaps (Poisson process) at `rate` per second, in ms. */
export function poissonGap(r: () => number, rate: number): number {
  return (-Math.log(1 - r()) / rate) * 1000;
}

/** Zipf(s) sampler over n items (1-based rank → index 0..n-1). */
export function zipf(r: () => number, n: number, s = 1.1): () => number {
  const weights = Array.from({ length: n }, (_, i) => 1 / Math.pow(i + 1, s));
  const total = weights.reduce((a, b) => a + b, 0);
  const cdf: number[] = [];
  let acc = 0;
  for (const w of weights) cdf.push((acc += w / total));
  return () => {
    const x = r();
    let lo = 0;
    let hi = n - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cdf[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  };
}
