/**
 * The routers' gossipsub mesh as a graph, for the mesh test and bench: its
 * connected parts and the fewest and most links a router holds, read now or
 * sampled over a window. One part is a mesh every state floods across
 * without repair.
 * Complexity: O(routers + links) per reading.
 */
import { performance } from 'node:perf_hooks';

/** The routers' mesh over a window: most parts seen, share of samples in more than one part, fewest and most links a router held. */
export interface MeshSample {
  most: number;
  splitShare: number;
  minDegree: number;
  maxDegree: number;
}

export interface MeshParts {
  parts: number;
  minDegree: number;
  maxDegree: number;
}

/**
 * The routers' mesh as a graph (an edge where either holds the other in its
 * mesh): its connected parts and the least and most links a router holds.
 * One part is a mesh every state floods across without repair. O(links).
 */
export function meshPartsOf(routers: ReadonlyArray<{ peerId: string; meshPeers: readonly string[] }>): MeshParts {
  const index = new Map(routers.map((r, i) => [r.peerId, i]));
  const links = routers.map(() => new Set<number>());
  routers.forEach((r, i) => {
    for (const p of r.meshPeers) {
      const j = index.get(p);
      if (j === undefined) continue;
      links[i]!.add(j);
      links[j]!.add(i);
    }
  });
  const part = new Array<number>(routers.length).fill(-1);
  let parts = 0;
  for (let i = 0; i < part.length; i++) {
    if (part[i] !== -1) continue;
    const stack = [i];
    part[i] = parts;
    for (let k = stack.pop(); k !== undefined; k = stack.pop())
      for (const j of links[k]!) {
        if (part[j] !== -1) continue;
        part[j] = parts;
        stack.push(j);
      }
    parts++;
  }
  const degrees = links.map((l) => l.size);
  return { parts, minDegree: Math.min(...degrees), maxDegree: Math.max(...degrees) };
}

/** The mesh read every `everyMs` for `windowMs`: the most parts seen, the share of samples split, the fewest and most links. */
export async function sampleMesh(
  windowMs: number,
  everyMs: number,
  read: () => Promise<MeshParts>,
): Promise<MeshSample> {
  const samples: MeshParts[] = [];
  for (const end = performance.now() + windowMs; performance.now() < end;) {
    samples.push(await read());
    await new Promise((r) => setTimeout(r, everyMs));
  }
  return {
    most: Math.max(...samples.map((s) => s.parts)),
    splitShare: samples.filter((s) => s.parts > 1).length / Math.max(1, samples.length),
    minDegree: Math.min(...samples.map((s) => s.minDegree)),
    maxDegree: Math.max(...samples.map((s) => s.maxDegree)),
  };
}
