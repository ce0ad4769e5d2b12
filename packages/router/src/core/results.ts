/**
 * What an attempt's result (SendResult) means to each part of the core: to
 * the policy (its Outcome), to outlier ejection (a failure of which kind, or
 * none), and in words for error messages. One place, so the three readings
 * of a result cannot drift apart.
 */
import type { Outcome } from '../placement/types.ts';
import type { FailureKind } from './outliers.ts';
import type { SendResult } from './types.ts';

/** What an attempt's result says about its replica: a failure of which kind, or nothing. */
export function failureOf(r: SendResult): FailureKind | undefined {
  switch (r.kind) {
    case 'connect':
      return 'connect';
    case 'reset':
    case 'failed':
    case 'timeout':
      return 'error';
    case 'done':
      return r.error === 'interrupted' || (r.status !== undefined && r.status >= 500) ? 'error' : undefined;
    default:
      return undefined;
  }
}

/** The result in a few words, for error messages. */
export function failureText(r: SendResult): string {
  return r.kind === 'failed' ? `status ${r.status}` : r.kind;
}

/** The result as the policy's onComplete hears it. */
export function outcomeOf(r: SendResult): Outcome {
  switch (r.kind) {
    case 'done':
      return r.status !== undefined ? { kind: r.outcome, status: r.status } : { kind: r.outcome };
    case 'rejected':
      return { kind: 'rejected', status: r.status };
    case 'timeout':
      return { kind: 'error' };
    case 'failed':
      return { kind: 'error', status: r.status };
    default:
      return { kind: 'connect' };
  }
}
