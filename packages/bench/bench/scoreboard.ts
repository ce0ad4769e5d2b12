/**
 * Writes the docs' figures from the saved runs, so no figure is typed by
 * hand: docs/SCOREBOARD.md (every goal row), README.md's results table
 * (between `<!-- results:begin -->` and `<!-- results:end -->`), the README's
 * plot, docs/ABLATION.md's table (between `<!-- ablation:… -->`) when an
 * ablation JSON is given, docs/TENANTS.md's global-limits table from
 * docs/data/limits.json (bench/limits.ts) when it is there, its tenants
 * scenario's goal table from docs/data/tenants.json (bench/tenants.ts), and
 * docs/OPERATIONS.md's misroute table (between `<!-- misroutes:… -->`) from
 * docs/data/misroutes.json (bench/misroutes.ts), and docs/TIERS.md's tiered goal table (between
 * `<!-- tiered-goals:… -->`) from docs/data/tiers.json (`warmpath goals --tiers --json`). The docs test fails when a committed doc differs
 * from what the committed JSON gives.
 *
 *   node packages/bench/bench/scoreboard.ts --goals docs/data/goals.json [--ablation docs/data/ablation.json]
 *     [--plot] [--check] [--commit SHA --command "warmpath goals …"]
 *
 * --goals / --ablation: paths relative to the repository root (defaults: the
 *   committed docs/data/ files); copy a new run there first.
 * --plot: also draw docs/plots/results.png (needs /usr/bin/chromium).
 * --check: write nothing; exit 1 naming each doc that differs.
 * --commit / --command: record in the goals JSON (as `meta`) which commit and
 *   command produced it, for a run saved before `goals` recorded it itself.
 * Smoke: --check
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { committedInputs, DOC_DATA, renderDocs } from '../src/docs-data.ts';
import { renderFigures } from '../src/figures.ts';
import { resultsCharts, type GoalsJson } from '../src/scoreboard.ts';
import { scriptArgs } from '@warmpath/shared/runtime';

const ROOT = join(import.meta.dirname, '../../..');
const { values } = scriptArgs(import.meta.url, {
  options: {
    goals: { type: 'string' },
    ablation: { type: 'string' },
    plot: { type: 'boolean', default: false },
    check: { type: 'boolean', default: false },
    commit: { type: 'string' },
    command: { type: 'string' },
  },
});
const committed = committedInputs(ROOT);
const inputs = {
  goals: values.goals ?? committed.goals,
  ...(values.ablation !== undefined
    ? { ablation: values.ablation }
    : committed.ablation !== undefined
      ? { ablation: committed.ablation }
      : {}),
  ...(committed.ablationScale !== undefined ? { ablationScale: committed.ablationScale } : {}),
  ...(committed.limits !== undefined ? { limits: committed.limits } : {}),
  ...(committed.misroutes !== undefined ? { misroutes: committed.misroutes } : {}),
  ...(committed.limitsLive !== undefined ? { limitsLive: committed.limitsLive } : {}),
  ...(committed.tenants !== undefined ? { tenants: committed.tenants } : {}),
  ...(committed.tiers !== undefined ? { tiers: committed.tiers } : {}),
  ...(committed.pdGoals !== undefined ? { pdGoals: committed.pdGoals } : {}),
};
if (values.commit !== undefined || values.command !== undefined) {
  const path = join(ROOT, inputs.goals);
  const json = JSON.parse(readFileSync(path, 'utf8')) as GoalsJson;
  json.meta = {
    ...json.meta,
    ...(values.commit !== undefined ? { commit: values.commit } : {}),
    ...(values.command !== undefined ? { command: values.command } : {}),
  };
  writeFileSync(path, JSON.stringify(json, null, 1));
}
const docs = renderDocs(ROOT, inputs);
let stale = 0;
for (const [path, text] of docs) {
  const now = readFileSync(join(ROOT, path), 'utf8');
  if (now === text) continue;
  if (values.check) {
    stale++;
    console.error(`${path} differs from what the saved JSON gives`);
  } else {
    writeFileSync(join(ROOT, path), text);
    console.log(`wrote ${path}`);
  }
}
if (values.plot) {
  const goals = JSON.parse(readFileSync(join(ROOT, inputs.goals), 'utf8')) as GoalsJson;
  await renderFigures([{ file: join(ROOT, DOC_DATA.plot), charts: resultsCharts(goals), width: 460, height: 300 }]);
  console.log(`wrote ${DOC_DATA.plot}`);
}
console.log(
  `${docs.size} docs checked against ${[inputs.goals, inputs.ablation, inputs.ablationScale, inputs.misroutes, inputs.tiers, inputs.pdGoals].filter((x) => x !== undefined).join(', ')}: ${stale} differ`,
);
if (stale > 0) process.exit(1);
