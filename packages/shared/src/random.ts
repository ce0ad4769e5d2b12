/**
 * mulberry32: a small, fast, seeded PRNG returning floats in [0, 1). Used
 * wherever a run must be reproducible from a seed (simulator fault injection,
 * workloads, benches); not for anything that needs unpredictability.
 * Complexity: O(1) per draw, 32 bits of state.
 * Trade-off: period 2^32 and weak low bits — plenty for workloads and fault
 * rates, and one line of state to seed and log.
 */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A 32-bit integer mixer (bijective, the "lowbias32" constants): a uniform-looking hash of any 32-bit input. */
export function mix32(x: number): number {
  x = Math.imul(x ^ (x >>> 16), 0x7feb352d);
  x = Math.imul(x ^ (x >>> 15), 0x846ca68b);
  return (x ^ (x >>> 16)) >>> 0;
}
