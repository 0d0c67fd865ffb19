import { expect } from 'chai';
import { Resources } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { eventually } from '@topovol/testing';
import { NodeShardWriter, runPerNodeWriter, shardName, shardOf } from '../../src/status/index.js';
import { createCSIDriver, deleteDriverStatus, driverStatus, headOf, poolsOf, recordingClient, statusClients, uniqueDriver } from './status-helpers.js';
import type { RecordedRequest } from './status-helpers.js';

const API = '/apis/topovol.io/v1alpha1';

/** Node names grouped by the shard their name hashes to. */
function byShard(nodes: readonly string[], shards: number): Map<number, string[]> {
  const out = new Map<number, string[]>();
  for (const n of nodes) out.set(shardOf(n, shards), [...(out.get(shardOf(n, shards)) ?? []), n]);
  return out;
}

/** Per-node writers, each with its own recorded client and poll counter; stop() ends them all. */
function startWriters(client: KubeClient, driverName: string, nodes: readonly string[], opts: { shards: number; refreshMs: number; expiryMs: number }) {
  const logs = new Map(nodes.map((n) => [n, [] as RecordedRequest[]]));
  const polls = new Map(nodes.map((n) => [n, 0]));
  const figures = new Map(nodes.map((n) => [n, '1Gi']));
  const stops = new Map(nodes.map((n) => [n, new AbortController()]));
  const running = new Map(
    nodes.map((nodeName) => [
      nodeName,
      runPerNodeWriter({
        ...opts,
        client: recordingClient(client, logs.get(nodeName)!),
        driverName,
        nodeName,
        capacity: () => {
          polls.set(nodeName, polls.get(nodeName)! + 1);
          return Promise.resolve({ capacity: figures.get(nodeName)! });
        },
        signal: stops.get(nodeName)!.signal,
      }),
    ]),
  );
  const stop = async (n: string): Promise<void> => {
    stops.get(n)!.abort();
    await running.get(n);
  };
  return { logs, polls, figures, stop, stopAll: () => Promise.all(nodes.map(stop)) };
}

// A per-node writer must not read the whole aggregated status every poll (docs/adr/0010): it reads
// and writes only the shard its node name hashes to, and in steady state not even that.
describe('capacity status per node: each writer touches only its own shard (real API server)', function () {
  this.timeout(180_000);
  let admin: KubeClient;
  let writerClient: KubeClient;

  before(async function () {
    ({ admin, writerClient } = await statusClients());
  });

  it('in steady state a poll costs a non-pruner no request and a shard\'s pruner one GET of its shard; a changed figure is one write to its shard, not followed by a read', async function () {
    const driverName = uniqueDriver('reads');
    await createCSIDriver(admin, driverName);
    const SHARDS = 4;
    const nodes = Array.from({ length: 24 }, (_, i) => `node-${String(i).padStart(2, '0')}`);
    // The pruner of a shard: the smallest live pool name in it.
    const pruners = new Set([...byShard(nodes, SHARDS).values()].map((ns) => [...ns].sort()[0]!));
    // expiryMs far beyond the test: no refresh is due, so a poll has nothing to write.
    const w = startWriters(writerClient, driverName, nodes, { shards: SHARDS, refreshMs: 300, expiryMs: 600_000 });
    const pollsAtLeast = async (n: number, since: Map<string, number>): Promise<void> =>
      eventually(() => {
        for (const node of nodes) expect(w.polls.get(node)! - (since.get(node) ?? 0), node).to.be.at.least(n);
      }, 60_000);
    try {
      await eventually(async () => expect(poolsOf((await driverStatus(admin, driverName)).storage, '<ephemeral>')).to.deep.equal(nodes), 60_000);
      // Two more polls each: every writer has seen its shard with all pools (a pruner reads it).
      await pollsAtLeast(2, new Map(w.polls));
      for (const log of w.logs.values()) log.splice(0);
      const start = new Map(w.polls);
      await pollsAtLeast(3, start);
      const quiet = new Map(w.polls);
      // One node's figure changes: its next poll writes its own shard. So does a pruner's, whose
      // write returns the shard: it needs no read in that poll.
      const changed = nodes.find((n) => !pruners.has(n))!;
      const changedPruner = [...pruners].sort()[0]!;
      w.figures.set(changed, '7Gi');
      w.figures.set(changedPruner, '3Gi');
      const pools = async (): Promise<Record<string, string>> => Object.fromEntries((await driverStatus(admin, driverName)).storage[0]!.pools!.map((p) => [p.name, String(p.capacity)]));
      await eventually(async () => expect(await pools()).to.deep.include({ [changed]: '7Gi', [changedPruner]: '3Gi' }));
      // Its shard's pruner brings the head's summary in step.
      await eventually(async () => expect((await headOf(admin, driverName))?.status).to.deep.include({ classCount: 1, poolCount: nodes.length, totalCapacity: `${nodes.length - 2 + 7 + 3}Gi` }));
      await w.stopAll();

      for (const node of nodes) {
        const own = `${API}/csidrivercapacityshards/${shardName(driverName, shardOf(node, SHARDS))}`;
        const head = `${API}/csidrivercapacities/${driverName}`;
        const log = w.logs.get(node)!.map((r) => `${r.method} ${r.path}`);
        const polls = w.polls.get(node)! - start.get(node)!;
        const gets = log.filter((r) => r === `GET ${own}`).length;
        if (pruners.has(node)) {
          // Its shard once per poll, and the small head for the shard's summary: nothing else.
          expect(log.filter((r) => !r.endsWith(own) && !r.endsWith(`${own}/status`) && !r.endsWith(head) && !r.endsWith(`${head}/status`)), node).to.deep.equal([]);
          expect(gets, `${node}: one GET of its shard per poll at most`).to.be.at.most(polls);
          const writes = log.filter((r) => r === `PATCH ${own}/status`).length;
          if (node === changedPruner) expect(writes, node).to.equal(1);
          expect(gets + writes, `${node}: no GET in a poll whose write returned the shard`).to.be.at.most(polls);
        } else if (node === changed) {
          expect(log, node).to.deep.equal([`PATCH ${own}/status`]);
        } else {
          expect(log, `${node}: polls ${polls}, nothing to write, nothing read`).to.deep.equal([]);
        }
      }
      expect(w.polls.get(changed)! - quiet.get(changed)!).to.be.at.least(1);
    } finally {
      await w.stopAll();
      await deleteDriverStatus(admin, driverName);
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });

  it('a non-pruner whose poll writes nothing judges its copy of the shard as of when it got it: a pool renewed since never looks lapsed to it, and it reads nothing', async function () {
    // Driven by hand on one clock, so the interleaving that made a non-pruner prune is exact: b's
    // copy comes from b's write while a's pool had under expiry/2 left; a renews after that; b's
    // next poll has nothing to write and comes after a's expiry in that copy, but before b's own
    // refresh is due. Dated when b got it, the copy shows a live; dated at that poll, a lapsed.
    const driverName = uniqueDriver('asof');
    await createCSIDriver(admin, driverName);
    // Expiry times are written to the second: whole seconds keep every margin below exact.
    const EXPIRY = 20_000;
    let clock = Math.ceil(Date.now() / 1000) * 1000;
    const now = (): number => clock;
    const logs = { a: [] as RecordedRequest[], b: [] as RecordedRequest[] };
    const writer = (n: 'a' | 'b'): NodeShardWriter => new NodeShardWriter(recordingClient(writerClient, logs[n]), { driverName, nodeName: `${driverName}-${n}`, expiryMs: EXPIRY, shards: 1, now });
    const a = writer('a');
    const b = writer('b');
    const poll = async (w: NodeShardWriter): Promise<boolean> => {
      const { wrote } = await w.publish({ capacity: '1Gi' });
      await w.maintain();
      return wrote;
    };
    try {
      const t0 = clock;
      expect(await poll(a), 'a: first write').to.equal(true); // a's pool until 20 s
      clock = t0 + 12_000; // a has 8 s left: under half the expiry, but a polls again only at 14 s
      expect(await poll(b), 'b: first write').to.equal(true); // b's pool until 32 s; its copy has a's until 20 s
      clock = t0 + 14_000;
      expect(await poll(a), 'a: refreshed').to.equal(true); // a's pool until 34 s
      logs.b.splice(0);
      clock = t0 + 21_000; // past a's expiry in b's copy; b's own refresh is due only after 22 s
      expect(await poll(b), 'b: nothing due').to.equal(false);
      expect(logs.b.map((r) => `${r.method} ${r.path}`), 'b read nothing: a is its shard\'s pruner').to.deep.equal([]);
      // b's own refresh returns the shard as it is: a live there, still no read.
      clock = t0 + 23_000;
      expect(await poll(b), 'b: refreshed').to.equal(true);
      expect(logs.b.map((r) => r.method), 'b: its write only').to.deep.equal(['PATCH']);
    } finally {
      await deleteDriverStatus(admin, driverName);
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });

  it('a shard whose last writer stopped is cleaned up by another shard\'s pruner once its summary expires', async function () {
    const driverName = uniqueDriver('orphan');
    await createCSIDriver(admin, driverName);
    const SHARDS = 4;
    // One node alone in shard 0, eleven in the others.
    const names = Array.from({ length: 100 }, (_, i) => `n-${i}`);
    const lonely = names.find((n) => shardOf(n, SHARDS) === 0)!;
    const nodes = [lonely, ...names.filter((n) => shardOf(n, SHARDS) !== 0).slice(0, 11)];
    expect(byShard(nodes, SHARDS).size, 'every shard has a writer').to.equal(SHARDS);
    const w = startWriters(writerClient, driverName, nodes, { shards: SHARDS, refreshMs: 500, expiryMs: 4_000 });
    try {
      await eventually(async () => expect((await headOf(admin, driverName))?.status).to.deep.include({ poolCount: nodes.length }), 60_000);
      await w.stop(lonely);
      const gone = await eventually(async () => {
        const st = await driverStatus(admin, driverName);
        expect(poolsOf(st.storage, '<ephemeral>')).to.deep.equal(nodes.filter((n) => n !== lonely).sort());
        expect(st.head?.status?.shards?.map((s) => s.shard)).to.not.include(shardOf(lonely, SHARDS));
        expect(st.head?.status).to.deep.include({ classCount: 1, poolCount: nodes.length - 1 });
        return st;
      }, 90_000);
      // The stopped node's manager is gone from its shard too (pruned as that manager).
      const shard = gone.shards.find((s) => s.spec!.shard === shardOf(lonely, SHARDS));
      expect((shard?.metadata?.managedFields ?? []).map((m) => m.manager)).to.not.include(`topovol-capacity/${lonely}`);
    } finally {
      await w.stopAll();
      await deleteDriverStatus(admin, driverName);
      await admin.delete(Resources.csiDrivers, driverName).catch(() => undefined);
    }
  });
});
