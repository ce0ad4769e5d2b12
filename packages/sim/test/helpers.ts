import { parsePrometheus } from '@warmpath/shared/runtime';
import { waitFor as waitUntil } from '@warmpath/testkit';

/** Waits until `cond` holds (state changes inside the server have no event to await from outside); see @warmpath/testkit. */
export async function waitFor<T>(
  cond: () => T | Promise<T>,
  what: string,
  timeoutMs = 10_000,
): Promise<NonNullable<T>> {
  return (await waitUntil(cond, { timeoutMs, intervalMs: 10, message: what })) as NonNullable<T>;
}

export async function postJson(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

export async function state(
  base: string,
): Promise<
  { engine: { running: number; waiting: number; kvUsedBlocks: number; preemptions: number } } & Record<string, unknown>
> {
  return (await (await fetch(`${base}/sim/v1/state`)).json()) as never;
}

/** Reads an SSE body event by event; resolves with the data payloads and whether [DONE] was seen. */
export async function readSse(
  res: Response,
  onEvent?: (data: string, index: number) => void,
): Promise<{ events: string[]; done: boolean; error?: unknown }> {
  const events: string[] = [];
  let done = false;
  const reader = res.body!.getReader();
  const dec = new TextDecoder();
  let buf = '';
  try {
    for (;;) {
      const { value, done: end } = await reader.read();
      if (end) break;
      buf += dec.decode(value, { stream: true });
      let i: number;
      while ((i = buf.indexOf('\n\n')) >= 0) {
        const ev = buf.slice(0, i);
        buf = buf.slice(i + 2);
        const data = ev.replace(/^data: /, '');
        if (data === '[DONE]') done = true;
        else {
          events.push(data);
          onEvent?.(data, events.length - 1);
        }
      }
    }
  } catch (error) {
    return { events, done, error };
  }
  return { events, done };
}

export async function metrics(base: string): Promise<Map<string, number>> {
  const text = await (await fetch(`${base}/metrics`)).text();
  const out = new Map<string, number>();
  for (const [name, samples] of parsePrometheus(text).series) {
    for (const s of samples) {
      const { engine: _e, model_name: _m, ...rest } = s.labels;
      const key =
        Object.keys(rest).length === 0
          ? name
          : `${name}{${Object.entries(rest)
              .map(([k, v]) => `${k}=${v}`)
              .join(',')}}`;
      out.set(key, s.value);
    }
  }
  return out;
}
