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
      const pending = post(`${agent.url}/v1/completions`, { model: 'sql', prompt: 'select '.repeat(100), max_tokens: 200 });
      await until('sql hot', () => agent.state().hotAdapters.includes('sql'));
      expect(agent.state().capacity.adapterSlots).toBe(2);
      expect((await pending).status).toBe(200);
    } finally {
      await agent.close();
      await sim.close();
    }
  });
});
