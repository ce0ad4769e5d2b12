import { defineConfig } from 'vitest/config';

// One project per package plus the cross-process end-to-end suite, so
// `vitest run --project shared` runs one package alone.
const packages = ['shared', 'sim', 'agent', 'router', 'launch', 'bench', 'cli', 'testkit'];

export default defineConfig({
  test: {
    projects: [
      ...packages.map((name) => ({
        test: {
          name,
          root: `packages/${name}`,
          include: ['src/**/*.test.ts', 'test/**/*.test.ts'],
          testTimeout: 30_000,
        },
      })),
      {
        test: {
          name: 'e2e',
          root: 'test',
          include: ['**/*.test.ts'],
          exclude: ['**/node_modules/**'],
          testTimeout: 120_000,
          hookTimeout: 120_000,
          // Each e2e file starts real process fleets; two at once is what 2 cores hold.
          maxWorkers: 2,
        },
      },
    ],
  },
});
