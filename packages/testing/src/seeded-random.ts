/**
 * A small seeded pseudo-random generator (mulberry32), uniform in [0, 1): test tooling whose
 * randomness must be replayable (the fault proxy's faults, a bench's change schedule).
 */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
