/**
 * docs/CONFIGURATION.md, generated from the commands' config schemas: one
 * or two tables per command (the settings `--help` lists, then the rest) with
 * each key's flag, environment variable, default, valid values and doc string. `npm run docs:config` rewrites the file; a
 * test fails when the file and the schemas differ, so the reference cannot
 * drift. The schemas' `doc` strings are the one source.
 */
import { writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { AGENT_SCHEMA } from '@warmpath/agent';
import { AGENT_HELP } from '@warmpath/agent/cli';
import { benchSchema, BENCH_HELP } from '@warmpath/bench/cli';
import { goalsSchema, GOALS_HELP } from '@warmpath/bench/goals';
import { ROUTER_SCHEMA } from '@warmpath/router';
import { ROUTER_HELP } from '@warmpath/router/cli';
import {
  defaultText,
  envName,
  essentialKeys,
  flagName,
  type CommandHelp,
  type FieldSpec,
  type Schema,
} from '@warmpath/shared/runtime';
import { simSchema, SIM_HELP } from '@warmpath/sim/cli';
import { demoSchema, DEMO_HELP } from './demo.ts';

/** Every command with options, in the order `warmpath --help` lists them. */
export const COMMANDS: ReadonlyArray<{ name: string; schema: Schema; help: CommandHelp }> = [
  { name: 'sim', schema: simSchema, help: SIM_HELP },
  { name: 'agent', schema: AGENT_SCHEMA, help: AGENT_HELP },
  { name: 'router', schema: ROUTER_SCHEMA, help: ROUTER_HELP },
  { name: 'demo', schema: demoSchema, help: DEMO_HELP },
  { name: 'bench', schema: benchSchema, help: BENCH_HELP },
  { name: 'goals', schema: goalsSchema, help: GOALS_HELP },
];

export const CONFIGURATION_MD = fileURLToPath(new URL('../../../docs/CONFIGURATION.md', import.meta.url));

/** What values a field takes, from its spec. */
function validValues(spec: FieldSpec): string {
  switch (spec.type) {
    case 'number': {
      const range =
        spec.min !== undefined && spec.max !== undefined
          ? `${spec.min}–${spec.max}`
          : spec.min !== undefined
            ? `≥ ${spec.min}`
            : spec.max !== undefined
              ? `≤ ${spec.max}`
              : 'any';
      return `${spec.integer === true ? 'integer' : 'number'}, ${range}`;
    }
    case 'string':
      return spec.choices !== undefined ? spec.choices.map((c) => `\`${c}\``).join(', ') : 'text';
    case 'boolean':
      return '`true`, `false`';
    case 'list':
      return spec.choices !== undefined ? `list of ${spec.choices.map((c) => `\`${c}\``).join(', ')}` : 'list';
  }
}

const cell = (text: string): string => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');

/** A Markdown table of `keys` of `schema`: flag, environment variable, default, valid values, doc. */
function table(schema: Schema, keys: readonly string[]): string {
  const rows = keys.map((key) => {
    const spec = schema[key]!;
    return `| \`${key}\` | \`--${flagName(key)}\` | \`${envName(key)}\` | \`${defaultText(spec)}\` | ${cell(validValues(spec))} | ${cell(spec.doc)} |`;
  });
  return [
    '| key | flag | environment | default | valid values | what it does |',
    '|---|---|---|---|---|---|',
    ...rows,
  ].join('\n');
}

export function configurationReference(): string {
  const sections = COMMANDS.map(({ name, schema, help }) => {
    const essential = essentialKeys(schema);
    const rest = Object.keys(schema).filter((k) => !essential.includes(k));
    return [
      `## warmpath ${name}`,
      help.description,
      rest.length > 0 ? `The settings most changed (\`warmpath ${name} --help\`):` : undefined,
      table(schema, essential),
      rest.length > 0 ? `The rest (\`warmpath ${name} --help-all\`):` : undefined,
      rest.length > 0 ? table(schema, rest) : undefined,
      help.more !== undefined ? `\`\`\`\n${help.more}\n\`\`\`` : undefined,
    ]
      .filter((p) => p !== undefined)
      .join('\n\n');
  });
  return `# Configuration reference

<!-- Generated from the config schemas by \`npm run docs:config\` (packages/cli/src/config-docs.ts). Edit the schemas, not this file: a test fails when they differ. -->

Every command reads one schema of keys. Each key is set by, in increasing
precedence: a YAML or JSON file (\`--config FILE\`, keys as in the first
column), an environment variable, a command-line flag. Unknown keys are
errors that name the key, in every source; values are checked once at start
(type, range, choices) and then fixed for the process's life. Booleans also
take \`--no-<flag>\`; lists take a comma-separated value or a repeated flag.
\`warmpath <command> --help\` prints the settings most changed with examples;
\`--help-all\` prints every one. Each doc string states the rule; the
evidence behind a default lives in [ABLATION.md](ABLATION.md),
[SCALE.md](SCALE.md) and [DESIGN-RATIONALE.md](DESIGN-RATIONALE.md).

Durations are in the unit their key ends with (\`Ms\`: milliseconds, \`S\`:
seconds), sizes in bytes, tokens or characters as the key says. How to
choose the settings that matter: [OPERATIONS.md](OPERATIONS.md).

${sections.join('\n\n')}
`;
}

if (import.meta.main) {
  writeFileSync(CONFIGURATION_MD, configurationReference());
  console.log(`wrote ${CONFIGURATION_MD}`);
}
