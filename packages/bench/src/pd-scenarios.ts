/**
 * The workloads of prefill/decode disaggregation (docs/DISAGGREGATION.md,
 * "Goodput"), beside the others in scenarios.ts:
 *  - longdoc: long prompts and long outputs (documents rewritten or
 *    summarised at length): every request's prefill is long and so is its
 *    decode, the case a split is built for.
 *  - mixed: short chats among long documents: most requests are short (a
 *    split would only add a transfer), a few are long (their prefill stalls
 *    the short ones' token streams on an aggregated replica). The case for
 *    deciding per request.
 * Both are single requests (no follow-up turns), Poisson arrivals at `rate`
 * requests per simulated second; a long document is one of 8 shared ones
 * (Zipf, 30%) or a context of its own. Their plans are here; scenarios.ts
 * names them, with their fleets.
 */
import type { PlannedRequest } from './loadgen.ts';
import { arrivals, chat, uniform, type Message, type PlanParams } from './plan-kit.ts';
import { rng, textOf, zipf } from './text.ts';

/** A long document's context: a shared one (30%) or its own, `lo`–`hi` tokens. */
function documents(name: string, seed: number, r: () => number, lo: number, hi: number): (id: string) => string {
  const docs = Array.from({ length: 8 }, (_, i) => textOf(`${name}/doc-${i}`, lo + ((i * (hi - lo)) >> 3)));
  const pick = zipf(r, docs.length, 1.0);
  return (id) =>
    r() < 0.3 ? docs[pick()]! : textOf(`${name}/s${seed}/${id}/context`, Math.round(lo + r() * (hi - lo)));
}

/** One request on a document: its context, then an instruction of 50–200 tokens. */
function onDocument(
  p: PlanParams,
  at: number,
  context: string,
  id: string,
  r: () => number,
  out: number,
): PlannedRequest {
  const msgs: Message[] = [
    { role: 'system', content: context },
    { role: 'user', content: textOf(`${id}/ask`, Math.round(50 + r() * 150)) },
  ];
  return chat(p, at, msgs, out, 'document');
}

/** longdoc: prompts of 6–16k tokens, outputs of 300–1,200 tokens. */
export function longdocPlan(p: PlanParams & { rate: number }): PlannedRequest[] {
  const r = rng(p.seed ^ 0x10d0c);
  const doc = documents('longdoc', p.seed, r, 6_000, 16_000);
  const out = uniform(r, 300, 1_200);
  return arrivals(
    p,
    r,
    () => p.rate,
    (at, i) => onDocument(p, at, doc(`r${i}`), `longdoc/s${p.seed}/r${i}`, r, out()),
  );
}

/** mixed: 85% short chats (a 300-token system prompt, 100–400-token questions, 50–250-token answers), 15% documents of 8–24k tokens (100–400-token answers). */
export function mixedPlan(p: PlanParams & { rate: number }): PlannedRequest[] {
  const r = rng(p.seed ^ 0x313ed);
  const system = textOf('mixed/system', 300);
  const doc = documents('mixed', p.seed, r, 8_000, 24_000);
  return arrivals(
    p,
    r,
    () => p.rate,
    (at, i) => {
      const id = `mixed/s${p.seed}/r${i}`;
      if (r() < 0.15) return onDocument(p, at, doc(`r${i}`), id, r, Math.round(100 + r() * 300));
      const msgs: Message[] = [
        { role: 'system', content: system },
        { role: 'user', content: textOf(`${id}/ask`, Math.round(100 + r() * 300)) },
      ];
      return chat(p, at, msgs, Math.round(50 + r() * 200), 'chat');
    },
  );
}
