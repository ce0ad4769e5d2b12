/**
 * A fake upstream agent: answers OpenAI chat/completions (stream and not)
 * like an engine would, with switchable misbehaviour for router tests.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { flood, type Flood } from '@warmpath/testkit';
import { receiptComment, receiptHeaders } from '@warmpath/shared/wire';

/**
 * error-500: answers 500 at once; late-headers: the stream's headers come only
 * after `delayMs` (a long prefill behind an engine that sends headers with the
 * first token); stall-mid-stream: two tokens, then silence `delayMs` long
 * between the second and the third; error-mid-stream: two tokens, then an
 * engine's error event and the end of the stream (no [DONE]); flood: a
 * stream of FLOOD_BYTES written as fast as the connection takes it
 * (testkit's `flood`, kept in `flood`: what it wrote, whether it is held back).
 */
export type Mode =
  | 'ok'
  | 'reject'
  | 'die-mid-stream'
  | 'error-mid-stream'
  | 'slow-stream'
  | 'unavailable'
  | 'error-500'
  | 'late-headers'
  | 'stall-mid-stream'
  | 'flood';

export interface FakeAgent {
  url: string;
  server: Server;
  mode: Mode;
  hits: number;
  /** Requests whose connection closed before the answer finished. */
  aborted: number;
  lastHeaders: IncomingMessage['headers'] | undefined;
  lastBody: string;
  /** The pause of late-headers and stall-mid-stream, ms. */
  delayMs: number;
  /** The last flood stream. */
  flood: Flood | undefined;
  /** When set, the engine's cached tokens in the agent's receipt (a real agent's headers, or a stream's closing comment), beside prompt and completion tokens. */
  cached: number | undefined;
  close(): Promise<void>;
}

export async function startFakeAgent(name: string, mode: Mode = 'ok'): Promise<FakeAgent> {
  const agent: FakeAgent = {
    url: '',
    server: undefined as unknown as Server,
    mode,
    hits: 0,
    aborted: 0,
    lastHeaders: undefined,
    lastBody: '',
    delayMs: 500,
    flood: undefined,
    cached: undefined,
    close: async () => {
      agent.server.closeAllConnections();
      await new Promise<void>((r) => agent.server.close(() => r()));
    },
  };
  agent.server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      agent.hits++;
      agent.lastHeaders = req.headers;
      agent.lastBody = Buffer.concat(chunks).toString('utf8');
      const body = JSON.parse(agent.lastBody) as { stream?: boolean; model: string };
      res.on('close', () => {
        if (!res.writableFinished) agent.aborted++;
      });
      if (agent.mode === 'reject') {
        res.writeHead(429, { 'content-type': 'application/json', 'x-warmpath-reject-reason': 'kv' });
        res.end(
          JSON.stringify({
            error: { message: 'full', type: 'rate_limit_error', param: null, code: 'admission_rejected' },
          }),
        );
        return;
      }
      if (agent.mode === 'error-500') {
        res.writeHead(500, { 'content-type': 'application/json' });
        res.end('{"error":{"message":"engine exploded","type":"api_error","param":null,"code":"internal_error"}}');
        return;
      }
      if (agent.mode === 'unavailable') {
        res.writeHead(503, { 'content-type': 'application/json' });
        res.end('{"error":{"code":"draining"}}');
        return;
      }
      if (!body.stream) {
        const out = JSON.stringify({
          id: 'c1',
          object: 'chat.completion',
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: `hello from ${name}` }, finish_reason: 'stop' }],
          usage: { prompt_tokens: 5, completion_tokens: 3, total_tokens: 8 },
        });
        res.writeHead(200, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(out),
          ...receiptHeaders({ promptTokens: 5, completionTokens: 3, cachedTokens: agent.cached }),
        });
        res.end(out);
        return;
      }
      if (agent.mode === 'flood') {
        agent.flood = flood(res);
        return;
      }
      const tokens = ['hel', 'lo ', 'from ', name];
      let i = 0;
      const tick = (): void => {
        if (i === 0 && !res.headersSent)
          res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        if (res.destroyed) return;
        if (agent.mode === 'die-mid-stream' && i === 2) {
          res.socket?.destroy();
          return;
        }
        if (agent.mode === 'error-mid-stream' && i === 2) {
          // As llama.cpp ends a stream that fails partway: an error event split over two writes, no [DONE].
          res.write('data: {"err');
          res.end('or":{"code":500,"message":"Failed to parse input","type":"server_error"}}\n\n');
          return;
        }
        if (i < tokens.length) {
          res.write(
            `data: ${JSON.stringify({ id: 'c1', object: 'chat.completion.chunk', choices: [{ index: 0, delta: { content: tokens[i] } }] })}\n\n`,
          );
          i++;
          setTimeout(
            tick,
            agent.mode === 'slow-stream' ? 200 : agent.mode === 'stall-mid-stream' && i === 2 ? agent.delayMs : 5,
          );
          return;
        }
        // As the real agent does: the receipt, the engine's usage, before [DONE].
        res.end(
          `${receiptComment({ promptTokens: 7, completionTokens: 4, cachedTokens: agent.cached })}data: [DONE]\n\n`,
        );
      };
      if (agent.mode === 'late-headers') setTimeout(tick, agent.delayMs);
      else tick();
    });
  });
  await new Promise<void>((r) => agent.server.listen(0, '127.0.0.1', r));
  agent.url = `http://127.0.0.1:${(agent.server.address() as AddressInfo).port}`;
  return agent;
}
