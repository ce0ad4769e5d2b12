/**
 * Prefix-hashing throughput: MB/s of the chained xxh64 and the cost of
 * describing 8 KB, 128 KB and 1 MB chat prompts (JSON parse + canonical text +
 * chain), the work a router and an agent do per request.
 *
 *   node_modules/.bin/node packages/shared/bench/prefix.ts [--ms 300] [--mb 4]
 *
 * --ms: how long each figure is timed, ms; --mb: MB of text in the throughput runs.
 * Smoke: --ms 5 --mb 0.25
 */
import {
  canonicalText,
  chainHashes,
  describeRequest,
  FLEET_DEFAULTS,
  parseJsonBody,
  prefixSeed,
} from '@warmpath/shared/wire';
import { scriptArgs } from '../src/script-args.ts';

function words(n: number, seed: number): string {
  const vocab = [
    'alpha',
    'beta',
    'gamma',
    'delta',
    'kv',
    'cache',
    'prefix',
    'router',
    'token',
    'stream',
    'replica',
    'adapter',
  ];
  let s = '';
  let x = seed;
  while (s.length < n) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    s += vocab[x % vocab.length] + ' ';
  }
  return s.slice(0, n);
}

const { values: opts } = scriptArgs(import.meta.url, {
  options: { ms: { type: 'string', default: '300' }, mb: { type: 'string', default: '4' } },
});
const MIN_MS = Number(opts.ms);
const TEXT_CHARS = Math.round(Number(opts.mb) * (1 << 20));

function time(fn: () => void, minMs = MIN_MS): number {
  for (let i = 0; i < 3; i++) fn();
  let iters = 0;
  const start = performance.now();
  let now = start;
  while (now - start < minMs) {
    fn();
    iters++;
    now = performance.now();
  }
  return (now - start) / iters;
}

const seed = prefixSeed('meta-llama/Llama-3.1-8B-Instruct');
console.log(
  `chunkChars=${FLEET_DEFAULTS.chunkChars} maxChunks=${FLEET_DEFAULTS.maxChunks} (Node ${process.version})\n`,
);
console.log('chained xxh64 over chunks (no chunk limit):');
for (const chunk of [64, 256, 1024]) {
  const text = words(TEXT_CHARS, 1);
  const ms = time(() => chainHashes(text, chunk, seed, Infinity));
  console.log(
    `  chunk ${String(chunk).padStart(4)} chars: ${(((text.length / ms) * 1e3) / 1e6).toFixed(0).padStart(5)} MB/s  (${((ms * 1e3) / (text.length / chunk)).toFixed(2)} µs/chunk)`,
  );
}
const nonAscii = words(Math.min(TEXT_CHARS, 1 << 20), 2).replace(/a/g, 'ä');
const msNA = time(() => chainHashes(nonAscii, 256, seed, Infinity));
console.log(`  non-ASCII text, chunk 256: ${(((nonAscii.length / msNA) * 1e3) / 1e6).toFixed(0)} M chars/s`);

console.log('\nper-request cost (JSON.parse + canonical text + chain, default limits):');
console.log('  prompt     parse     render    chain     total');
for (const [label, size] of [
  ['8 KB', 8 << 10],
  ['128 KB', 128 << 10],
  ['1 MB', 1 << 20],
] as const) {
  const body = JSON.stringify({
    model: 'meta-llama/Llama-3.1-8B-Instruct',
    messages: [
      { role: 'system', content: words(Math.min(size / 2, 8192), 3) },
      { role: 'user', content: words(size - Math.min(size / 2, 8192), 4) },
    ],
    stream: true,
  });
  const buf = Buffer.from(body);
  const parsed = parseJsonBody(buf);
  const text = canonicalText(parsed, 'chat');
  const tParse = time(() => parseJsonBody(buf));
  const tRender = time(() => canonicalText(parsed, 'chat'));
  const tChain = time(() => chainHashes(text, FLEET_DEFAULTS.chunkChars, seed, FLEET_DEFAULTS.maxChunks));
  const tAll = time(() => describeRequest(parseJsonBody(buf), 'chat'));
  const f = (ms: number) => `${(ms * 1e3).toFixed(0).padStart(6)} µs`;
  console.log(`  ${label.padEnd(8)} ${f(tParse)} ${f(tRender)} ${f(tChain)} ${f(tAll)}`);
}
