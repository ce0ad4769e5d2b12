/** The router README's tables stay in step with the code: every branch name and every switchable step. */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { BRANCHES } from '../src/placement/types.ts';
import { SWITCHABLE_STEPS } from '../src/placement/warmpath/steps.ts';

const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
/** The first cell of every Markdown table row, split on " / " and ", " (rows may name several). */
const firstCells = new Set(
  readme
    .split('\n')
    .filter((l) => l.startsWith('| `'))
    .flatMap((l) =>
      l
        .split('|')[1]!
        .split(/ \/ |, /)
        .map((c) => c.trim().replace(/^`|`$/g, '')),
    ),
);

describe('router README', () => {
  it('has a row for every branch name', () => {
    for (const b of BRANCHES) expect(firstCells, b).toContain(b);
  });

  it('lists every switchable step with its fallback as steps.ts states it', () => {
    for (const [step, without] of Object.entries(SWITCHABLE_STEPS))
      expect(readme).toContain(`| \`${step}\` | ${without} |`);
  });
});
