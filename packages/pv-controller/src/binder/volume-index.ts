import { volumeNodeAffinityMatches } from '@topovol/shared';
import type { Node, PersistentVolume } from '@topovol/shared';
import { accessModesKey } from './access-modes.js';
import { capacityBytes } from './check-volume-satisfies-claim.js';
import { volumeClass } from './claim-helpers.js';
import { compareVolumes, SortedVolumes } from './sorted-volumes.js';
import { isFreeVolume } from './volume-offer.js';

interface FreeEntry {
  /** Class and access-mode group: the lists a volume is filed in. */
  list: string;
  cls: string;
  group: string;
  bytes: bigint;
  affine: boolean;
}

const listKey = (cls: string, group: string): string => `${cls}\n${group}`;

const hasAffinity = (v: PersistentVolume): boolean => (v.spec?.nodeAffinity?.required?.nodeSelectorTerms?.length ?? 0) > 0;

/**
 * The binder's candidate indexes, so that matching never scans every volume:
 * - free volumes per class and access-mode group, sorted by capacity (then name), split into
 *   node-affine and not;
 * - per node, the free node-affine volumes it can reach, by class and group (KEP-490 "Performance
 *   and Optimizations": evaluate a PV's node affinity once per node when it changes, not per claim);
 * - volumes by the claim their claimRef names (pre-bound by a user or the scheduler).
 * Fed from the informers' event handlers; it holds names and sizes only, the objects stay in the
 * informer caches.
 */
export class VolumeIndex {
  private readonly freeGlobal = new Map<string, SortedVolumes>();
  private readonly freeAffine = new Map<string, SortedVolumes>();
  private readonly free = new Map<string, FreeEntry>();
  /** node → class → names of free node-affine volumes reachable from it. */
  private readonly perNode = new Map<string, Map<string, SortedVolumes>>();
  private readonly nodesOfVolume = new Map<string, Set<string>>();
  private readonly affineVolumes = new Map<string, PersistentVolume>();
  private readonly byClaim = new Map<string, Set<string>>();
  private readonly claimOfVolume = new Map<string, string>();
  private readonly nodes = new Map<string, Node>();
  /** class → access-mode group → how many free volumes it holds. */
  private readonly groups = new Map<string, Map<string, number>>();

  upsertVolume(v: PersistentVolume): void {
    const name = v.metadata?.name ?? '';
    this.deleteVolume(name);
    const ref = v.spec?.claimRef;
    if (ref?.name) {
      const key = `${ref.namespace ?? ''}/${ref.name}`;
      this.claimOfVolume.set(name, key);
      let set = this.byClaim.get(key);
      if (!set) this.byClaim.set(key, (set = new Set()));
      set.add(name);
    }
    const bytes = capacityBytes(v);
    if (!isFreeVolume(v) || bytes === undefined) return;
    const cls = volumeClass(v);
    const group = accessModesKey(v.spec?.accessModes);
    const entry: FreeEntry = { list: listKey(cls, group), cls, group, bytes, affine: hasAffinity(v) };
    this.free.set(name, entry);
    const counts = mapOf(this.groups, cls);
    counts.set(group, (counts.get(group) ?? 0) + 1);
    listOf(entry.affine ? this.freeAffine : this.freeGlobal, entry.list).insert(bytes, name);
    if (!entry.affine) return;
    this.affineVolumes.set(name, v);
    const reach = new Set<string>();
    for (const node of this.nodes.values()) {
      if (!volumeNodeAffinityMatches(v.spec?.nodeAffinity, node)) continue;
      const nodeName = node.metadata?.name ?? '';
      reach.add(nodeName);
      listOf(mapOf(this.perNode, nodeName), entry.list).insert(bytes, name);
    }
    this.nodesOfVolume.set(name, reach);
  }

  deleteVolume(name: string): void {
    const claimKey = this.claimOfVolume.get(name);
    if (claimKey !== undefined) {
      this.claimOfVolume.delete(name);
      const set = this.byClaim.get(claimKey);
      set?.delete(name);
      if (set?.size === 0) this.byClaim.delete(claimKey);
    }
    const entry = this.free.get(name);
    if (!entry) return;
    this.free.delete(name);
    const counts = this.groups.get(entry.cls);
    const left = (counts?.get(entry.group) ?? 1) - 1;
    if (left > 0) counts?.set(entry.group, left);
    else counts?.delete(entry.group);
    (entry.affine ? this.freeAffine : this.freeGlobal).get(entry.list)?.remove(entry.bytes, name);
    if (!entry.affine) return;
    this.affineVolumes.delete(name);
    for (const nodeName of this.nodesOfVolume.get(name) ?? []) this.perNode.get(nodeName)?.get(entry.list)?.remove(entry.bytes, name);
    this.nodesOfVolume.delete(name);
  }

  /** A node appeared or its labels changed: re-evaluate the node-affine free volumes for it. */
  upsertNode(node: Node): void {
    const nodeName = node.metadata?.name ?? '';
    this.deleteNode(nodeName);
    this.nodes.set(nodeName, node);
    const byList = mapOf(this.perNode, nodeName);
    for (const [name, v] of this.affineVolumes) {
      if (!volumeNodeAffinityMatches(v.spec?.nodeAffinity, node)) continue;
      const entry = this.free.get(name)!;
      listOf(byList, entry.list).insert(entry.bytes, name);
      this.nodesOfVolume.get(name)?.add(nodeName);
    }
  }

  deleteNode(nodeName: string): void {
    if (!this.nodes.delete(nodeName)) return;
    for (const list of this.perNode.get(nodeName)?.values() ?? []) for (const name of list.names()) this.nodesOfVolume.get(name)?.delete(nodeName);
    this.perNode.delete(nodeName);
  }

  /** Names of volumes whose claimRef names this claim (any uid). */
  preBoundTo(namespace: string, name: string): string[] {
    return [...(this.byClaim.get(`${namespace}/${name}`) ?? [])];
  }

  /** The access-mode groups that hold free volumes of a class. */
  accessModeGroups(cls: string): string[] {
    return [...(this.groups.get(cls)?.keys() ?? [])];
  }

  /** Free volumes of a class and access-mode group with at least `minBytes`, smallest first (node-affine or not). */
  *freeVolumes(cls: string, group: string, minBytes: bigint): Generator<string> {
    const list = listKey(cls, group);
    yield* mergeAscending(this.freeGlobal.get(list)?.from(minBytes), this.freeAffine.get(list)?.from(minBytes));
  }

  /** Free volumes of a class and group reachable from a node (no affinity, or affinity matching it), smallest first. */
  *freeVolumesForNode(cls: string, group: string, nodeName: string, minBytes: bigint): Generator<string> {
    const list = listKey(cls, group);
    yield* mergeAscending(this.freeGlobal.get(list)?.from(minBytes), this.perNode.get(nodeName)?.get(list)?.from(minBytes));
  }

  /** For tests and metrics: how many free volumes are indexed. */
  get freeCount(): number {
    return this.free.size;
  }
}

function mapOf<V>(m: Map<string, Map<string, V>>, key: string): Map<string, V> {
  let inner = m.get(key);
  if (!inner) m.set(key, (inner = new Map<string, V>()));
  return inner;
}

function listOf(m: Map<string, SortedVolumes>, key: string): SortedVolumes {
  let list = m.get(key);
  if (!list) m.set(key, (list = new SortedVolumes()));
  return list;
}

type Entries = Iterator<[bigint, string], void>;

/** Merges two ascending (bytes, name) streams. */
function* mergeAscending(a: Entries | undefined, b: Entries | undefined): Generator<string> {
  const head = (it: Entries | undefined): [bigint, string] | undefined => {
    const r = it?.next();
    return r && !r.done ? r.value : undefined;
  };
  let x = head(a);
  let y = head(b);
  while (x || y) {
    if (x && (!y || compareVolumes(x[0], x[1], y[0], y[1]) <= 0)) {
      yield x[1];
      x = head(a);
    } else if (y) {
      yield y[1];
      y = head(b);
    }
  }
}
