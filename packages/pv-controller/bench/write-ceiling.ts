import { performance } from 'node:perf_hooks';
import { classifyError } from '@topovol/shared';
import type { KubeClient, ResourceType } from '@topovol/shared';

/** What the API server sustains for small writes from many connections: the bound no binder can beat. */
export interface WriteCeiling {
  /** Writes and seconds of the fastest round. */
  writes: number;
  seconds: number;
  writesPerSecond: number;
  /** writesPerSecond / WRITES_PER_BINDING: the bindings/s the API server could take at that rate. */
  bindingsPerSecond: number;
  inFlight: number;
  failed: number;
  /** writes/s of every round, in order. */
  rounds?: number[];
  /** kube-apiserver's and etcd's CPU per write over all rounds, in ms (absent in records before 2026-11-27). */
  serverCpuMsPerWrite?: number;
}

/** Rounds per measurement: other work on the machine can only slow a round, so the fastest one is the ceiling. */
export const CEILING_ROUNDS = 3;

/**
 * A static binding is at least four writes: the volume's claimRef, the volume's status, the claim's
 * volumeName, the claim's status (upstream's pkg/controller/volume/persistentvolume does the same four).
 */
export const WRITES_PER_BINDING = 4;

/**
 * Sends `writes` JSON merge patches (an annotation) to the given objects in CEILING_ROUNDS rounds,
 * round-robin, with `inFlight` requests outstanding on as many connections, and keeps the fastest
 * round. Run on the same control plane as the binder, with the same objects stored, so the ceiling
 * and the binder face the same etcd, the same API server flags and the same machine.
 */
export async function measureWriteCeiling(
  client: KubeClient,
  resource: ResourceType,
  names: readonly string[],
  writes: number,
  inFlight: number,
  serverCpuSeconds?: () => number,
): Promise<WriteCeiling> {
  if (names.length === 0) throw new Error('the write ceiling needs objects to patch');
  const perRound = Math.ceil(writes / CEILING_ROUNDS);
  const rounds: WriteCeiling[] = [];
  const cpu0 = serverCpuSeconds?.();
  for (let r = 0; r < CEILING_ROUNDS; r++) rounds.push(await oneRound(client, resource, names, perRound, inFlight, r * perRound));
  const cpu1 = serverCpuSeconds?.();
  const best = rounds.reduce((a, b) => (b.writesPerSecond > a.writesPerSecond ? b : a));
  const written = rounds.reduce((sum, x) => sum + x.writes, 0);
  const serverCpuMsPerWrite = cpu0 !== undefined && cpu1 !== undefined && written > 0 ? ((cpu1 - cpu0) * 1000) / written : undefined;
  return { ...best, rounds: rounds.map((x) => x.writesPerSecond), ...(serverCpuMsPerWrite !== undefined ? { serverCpuMsPerWrite } : {}) };
}

async function oneRound(client: KubeClient, resource: ResourceType, names: readonly string[], writes: number, inFlight: number, offset: number): Promise<WriteCeiling> {
  let next = 0;
  let failed = 0;
  const start = performance.now();
  const worker = async (): Promise<void> => {
    for (let i = next++; i < writes; i = next++) {
      const name = names[(offset + i) % names.length]!;
      try {
        await client.patch(resource, name, undefined, 'merge', { metadata: { annotations: { 'bench.topovol.io/ceiling': String(offset + i) } } });
      } catch (err) {
        // A refused write is not a write the API server sustained; count it and go on.
        if (!classifyError(err).retriable) throw err;
        failed++;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, writes) }, worker));
  const seconds = (performance.now() - start) / 1000;
  const done = writes - failed;
  return { writes: done, seconds, writesPerSecond: done / seconds, bindingsPerSecond: done / seconds / WRITES_PER_BINDING, inFlight, failed };
}
