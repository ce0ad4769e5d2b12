/**
 * The Node.js version check, run before anything else loads: by the CLI
 * (main.ts imports this first, so the npm bundle checks before it loads a
 * dependency) and by the workspace's npm scripts (`node
 * packages/cli/src/require-node.js && …`), so an old Node prints what it
 * needs instead of failing inside a dependency or on a `.ts` file.
 *
 * Plain JavaScript on purpose, the one such file in the sources: Node.js
 * strips TypeScript types only from 22.18 on, and this file must load on the
 * Node it turns away. The floor is package.json's `engines.node` (">=X.Y.Z").
 */
import pkg from '../package.json' with { type: 'json' };

const need = /^>=(\d+)\.(\d+)\.(\d+)$/.exec(pkg.engines.node)?.slice(1).map(Number);
if (need === undefined) throw new Error(`package.json engines.node must be ">=X.Y.Z" (is "${pkg.engines.node}")`);
const have = process.versions.node.split('.').map(Number);
const index = need.findIndex((n, i) => (have[i] ?? 0) !== n);
if (index >= 0 && (have[index] ?? 0) < need[index]) {
  // In the repository (not the npm bundle) the workspace brings its own Node: say how to get it.
  const fromSources = import.meta.url.endsWith('/src/require-node.js');
  const hint = fromSources
    ? 'run `npm run setup` once (it brings Node 24) and then `npm run warmpath -- …`'
    : 'install a current Node.js LTS or use the container image';
  console.error(`warmpath ${pkg.version} needs Node.js ${pkg.engines.node} (this is ${process.version}); ${hint}.`);
  process.exit(1);
}
