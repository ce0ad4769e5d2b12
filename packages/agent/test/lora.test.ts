import { describe, expect, it } from 'vitest';
import { startSimServer } from '@warmpath/sim';
import { startAgent } from '../src/index.ts';
import { post, until } from './helpers.ts';

describe('vLLM adapter live against the simulator', () => {
  it('reads models, LoRA adapters (parent), capacity and hot adapters', async () => {
    const sim = await startSimServer({ port: 0, profile: 'tiny', adapters: ['sql', 'chat'], maxLoras: 2, speed: 2 });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, scrapeIntervalMs: 50 });
    try {
      const s = agent.state();
      expect(s.models).toEqual([sim.modelName]);
      expect([...s.adapters].sort()).toEqual(['chat', 'sql']);
      expect(s.capacity.kvTokens).toBe(4096);
      expect(agent.core.ledger.resolveModel('sql')).toEqual({ model: sim.modelName, adapter: 'sql' });
      const pending = post(`${agent.url}/v1/completions`, {
        model: 'sql',
        prompt: 'select '.repeat(100),
        max_tokens: 200,
      });
      await until('sql hot', () => agent.state().hotAdapters.includes('sql'));
      expect(agent.state().capacity.adapterSlots).toBe(2);
      expect((await pending).status).toBe(200);
    } finally {
      await agent.close();
      await sim.close();
    }
  });

  it('publishes idle loaded adapters as hot, least recently used out first, as the engine evicts them', async () => {
    const sim = await startSimServer({
      port: 0,
      profile: 'tiny',
      adapters: ['sql', 'chat', 'docs'],
      maxLoras: 2,
      speed: 4,
    });
    const agent = await startAgent({ engineUrl: sim.url, gossip: false, scrapeIntervalMs: 50 });
    const plain = await startAgent({ engineUrl: sim.url, gossip: false, scrapeIntervalMs: 50, loadedAdapters: false });
    const ask = async (url: string, model: string): Promise<void> => {
      expect((await post(`${url}/v1/completions`, { model, prompt: 'select 1', max_tokens: 2 })).status).toBe(200);
    };
    try {
      await until(
        'slots known',
        () => agent.state().capacity.adapterSlots === 2 && plain.state().capacity.adapterSlots === 2,
      );
      await ask(agent.url, 'sql');
      await ask(agent.url, 'chat');
      // Finished: the engine reports no adapter in use, but they stay loaded.
      const idle = (): Promise<void> =>
        until('engine idle', () => agent.core.ledger.snapshot?.hotAdapters.length === 0);
      await idle();
      expect(agent.state().hotAdapters).toEqual(['chat', 'sql']);
      await ask(agent.url, 'docs');
      await idle();
      expect(agent.state().hotAdapters).toEqual(['docs', 'chat']);
      await ask(agent.url, 'chat');
      await idle();
      expect(agent.state().hotAdapters).toEqual(['chat', 'docs']);
      // Off: only what the engine reports in use.
      await ask(plain.url, 'sql');
      await until(
        'engine idle again',
        () => plain.state().hotAdapters.length === 0 && agent.state().hotAdapters.length === 2,
      );
    } finally {
      await plain.close();
      await agent.close();
      await sim.close();
    }
  });
});
