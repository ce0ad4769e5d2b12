import { describe, expect, it } from 'vitest';
import { ConfigError, keyValues } from '../src/runtime.ts';

describe('keyValues', () => {
  it('reads a list or a comma-separated string; a value keeps its own = signs', () => {
    expect(keyValues('--router-set', ['a=1', 'b=x=y'])).toEqual({ a: '1', b: 'x=y' });
    expect(keyValues('--router-set', 'a=1,,b=2')).toEqual({ a: '1', b: '2' });
    expect(keyValues('--router-set', '')).toEqual({});
  });

  it('refuses an item without a key, naming the flag', () => {
    expect(() => keyValues('--agent-set', ['=1'])).toThrow(ConfigError);
    expect(() => keyValues('--agent-set', 'a')).toThrow(/--agent-set expects key=value \(got "a"\)/);
  });
});
