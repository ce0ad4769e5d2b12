/**
 * The pieces every scenario's plan is made of (scenarios.ts): one chat
 * request, a multi-turn session whose history grows as a real chat client's
 * does, and open-loop Poisson arrivals. Deterministic given the draws.
 */
import { HEADERS } from '@warmpath/shared/wire';
import type { PlannedRequest } from './loadgen.ts';
import { poissonGap, textOf } from './text.ts';

/** What a plan is built from: its seed, simulated seconds of arrivals and the model requests name. */
export interface PlanParams {
  seed: number;
  duration: number;
  model: string;
}

export type Message = { role: 'system' | 'user' | 'assistant'; content: string };

export function chat(
  p: PlanParams,
  at: number,
  messages: Message[],
  maxTokens: number,
  tag: string,
  extra: Record<string, unknown> = {},
  session?: string,
): PlannedRequest {
  const body = { model: p.model, messages, max_tokens: maxTokens, ignore_eos: true, ...extra };
  // A session's requests carry its id in the session header, as real chat clients send one.
  return session === undefined
    ? { at, tag, body }
    : { at, tag, body, session, headers: { [HEADERS.session]: session } };
}

/** A session: turns `gapMs` apart, each a user message of `userTokens` and a reply of `replyTokens`. */
export function session(
  p: PlanParams,
  id: string,
  start: number,
  system: string | undefined,
  turns: number,
  sizes: { user: () => number; reply: () => number; gapMs: () => number },
  tag: (turn: number) => string,
): PlannedRequest[] {
  const out: PlannedRequest[] = [];
  const history: Message[] = system !== undefined ? [{ role: 'system', content: system }] : [];
  let at = start;
  for (let t = 0; t < turns; t++) {
    // Arrivals stop at the run's end: later turns of a session are not sent (the run drains promptly).
    if (at >= p.duration * 1000) break;
    history.push({ role: 'user', content: textOf(`${id}/u${t}`, sizes.user()) });
    const reply = sizes.reply();
    out.push(chat(p, at, [...history], reply, tag(t), {}, id));
    history.push({ role: 'assistant', content: textOf(`${id}/a${t}`, reply) });
    at += sizes.gapMs();
  }
  return out;
}

export const uniform = (r: () => number, lo: number, hi: number) => () => Math.round(lo + r() * (hi - lo));

/**
 * Open-loop Poisson arrivals over the run: `make(at, i)` builds arrival i
 * (drawing from `r` first), then the gap to the next is drawn at `rate(at)`
 * per simulated second. One place for the loop every scenario shares.
 */
export function arrivals(
  p: PlanParams,
  r: () => number,
  rate: (at: number) => number,
  make: (at: number, i: number) => PlannedRequest | PlannedRequest[],
): PlannedRequest[] {
  const out: PlannedRequest[] = [];
  for (let at = 0, i = 0; at < p.duration * 1000; i++) {
    const made = make(at, i);
    if (Array.isArray(made)) out.push(...made);
    else out.push(made);
    at += poissonGap(r, rate(at));
  }
  return out;
}
