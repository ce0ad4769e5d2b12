/**
 * Mooncake-format JSONL traces (timestamp, input_length, output_length,
 * hash_ids of 512-token blocks): reading one, and rendering a record as a
 * prompt. The trace scenario (scenarios.ts) replays them.
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { textOf } from './text.ts';

export interface TraceRecord {
  timestamp: number;
  input_length: number;
  output_length: number;
  hash_ids: number[];
}

export const TRACE_BLOCK_TOKENS = 512;
/** The Mooncake synthetic trace shipped with the benchmark (see traces/README.md). */
export const DEFAULT_TRACE = fileURLToPath(new URL('../traces/mooncake-synthetic.jsonl', import.meta.url));

/** The simulated model's context (Llama 3.1: 131,072 tokens); longer trace requests are cut to fit. */
export const TRACE_MAX_CONTEXT_TOKENS = 131_072;

export function readTrace(path: string): TraceRecord[] {
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as TraceRecord);
}

/**
 * Renders one trace record as a prompt: block id N is always the same
 * 512-token text; the last block holds only the remainder of input_length.
 * The text is rendered each time it is read, not kept: a trace prompt is
 * 60 KB on average, and a long replay's plan would otherwise hold every
 * prompt's text at once (an hour at 100 replicas: about 8 GB). The
 * simulator reads it once to describe the request (and peers that match
 * text read it when they place it).
 */
export function traceMessages(rec: TraceRecord): Array<{ role: 'user'; content: string }> {
  const ids = rec.hash_ids;
  const length = rec.input_length;
  const render = (): string => {
    const parts: string[] = [];
    ids.forEach((id, i) => {
      const remaining = length - i * TRACE_BLOCK_TOKENS;
      const last = i === ids.length - 1;
      parts.push(
        last
          ? textOf(`trace/block/${id}`, TRACE_BLOCK_TOKENS).slice(0, Math.max(0, remaining) * 4)
          : textOf(`trace/block/${id}`, TRACE_BLOCK_TOKENS),
      );
    });
    return parts.join('');
  };
  return [
    {
      role: 'user',
      get content() {
        return render();
      },
    },
  ];
}
