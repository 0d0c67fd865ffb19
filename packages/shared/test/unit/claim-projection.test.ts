import { expect } from 'chai';
import fc from 'fast-check';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { CLAIM_ANNOTATION_VALUE_KEPT, CLAIM_ANNOTATIONS_KEPT, CLAIM_NAME_KEPT, CLAIM_SELECTOR_KEPT, cutValue, EVENT_MESSAGE_KEPT, mergePatchDiff, projectClaim, projectEvent } from '../../src/index.js';
import type { Event, PersistentVolumeClaim } from '../../src/index.js';

/** A forced full collection (mocha runs without --expose-gc). */
function collect(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

describe('projectClaim: what a tenant decides the size of is bounded', function () {
  it('cuts volumeName and the data sources\' free-form names (the API server checks neither length)', function () {
    const long = 'a'.repeat(700_000);
    const p = projectClaim({
      metadata: { name: 'c', namespace: 'ns' },
      spec: { volumeName: long, dataSource: { kind: 'PersistentVolumeClaim', name: long }, dataSourceRef: { apiGroup: 'example.com', kind: long, name: long, namespace: 'other' } },
    } as PersistentVolumeClaim);
    expect(p.spec?.volumeName).to.have.length(CLAIM_NAME_KEPT + 1).and.to.match(/…$/);
    expect(p.spec?.dataSource).to.deep.equal({ apiGroup: undefined, kind: 'PersistentVolumeClaim', name: `${'a'.repeat(CLAIM_NAME_KEPT)}…` });
    expect(p.spec?.dataSourceRef?.kind).to.have.length(CLAIM_NAME_KEPT + 1);
    expect(p.spec?.dataSourceRef?.namespace).to.equal('other');
    expect(JSON.stringify(p).length).to.be.below(2_000);
  });

  it('keeps names within the limit as they are', function () {
    const p = projectClaim({ metadata: { name: 'c' }, spec: { volumeName: 'pv-1', dataSource: { apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' } } } as PersistentVolumeClaim);
    expect(p.spec?.volumeName).to.equal('pv-1');
    expect(p.spec?.dataSource).to.deep.equal({ apiGroup: 'snapshot.storage.k8s.io', kind: 'VolumeSnapshot', name: 'snap' });
  });

  // V8 makes a slice of a long string point into it: a cut value kept as a slice would keep the
  // whole value alive, so the cache would hold every long value whole.
  it('a cut value does not keep the whole value alive (claim annotations, Event messages)', function () {
    const N = 100;
    const VALUE = 256 * 1024;
    const heap = (): number => {
      collect();
      return process.memoryUsage().heapUsed;
    };
    const before = heap();
    // As an informer gets them: parsed from the API server's JSON, then projected.
    const kept = Array.from({ length: N }, (_, i) => {
      const claim = JSON.parse(JSON.stringify({ metadata: { name: `c${i}`, annotations: { 'volume.kubernetes.io/selected-node': `${i}`.padEnd(VALUE, 'x') } } })) as PersistentVolumeClaim;
      const event = JSON.parse(JSON.stringify({ metadata: { name: `e${i}` }, message: `${i}`.padEnd(VALUE, 'y') })) as Event;
      return [projectClaim(claim), projectEvent(event)] as const;
    });
    const grown = heap() - before;
    expect(kept[N - 1]![0].metadata?.annotations?.['volume.kubernetes.io/selected-node']).to.have.length(CLAIM_ANNOTATION_VALUE_KEPT + 1);
    expect(kept[N - 1]![1].message).to.have.length(EVENT_MESSAGE_KEPT + 1);
    // Whole values would be 2 × 100 × 256 KiB = 50 MiB; the cut ones are about 300 KiB.
    expect(grown, 'heap kept by the projections').to.be.below(10 * 1024 * 1024);
  });

  // The server writes null for some unset fields (a data source's apiGroup), and a claim's JSON may
  // hold what the types do not say: a projection that throws leaves the claim out of every cache.
  it('never throws, whatever JSON each field holds', function () {
    const any = fc.jsonValue({ maxDepth: 2 });
    const fields = (keys: string[]) => fc.record(Object.fromEntries(keys.map((k) => [k, any])), { requiredKeys: [] });
    const claimArb = fc.record(
      {
        metadata: fc.oneof(fc.constant(null), fc.record({ name: any, annotations: fc.oneof(any, fc.dictionary(fc.constantFrom('volume.kubernetes.io/selected-node', 'pv.kubernetes.io/bind-completed', 'x'), any)) }, { requiredKeys: [] })),
        spec: fc.oneof(any, fields(['accessModes', 'resources', 'selector', 'storageClassName', 'volumeName', 'volumeMode', 'volumeAttributesClassName', 'dataSource', 'dataSourceRef'])),
        status: fc.oneof(any, fields(['phase', 'accessModes', 'capacity', 'currentVolumeAttributesClassName', 'conditions'])),
      },
      { requiredKeys: [] },
    );
    fc.assert(fc.property(claimArb, (c) => void projectClaim(c as PersistentVolumeClaim)), { numRuns: 3000 });
    expect(projectClaim({ metadata: { name: 'c' }, spec: { dataSource: { apiGroup: null, kind: 'PersistentVolumeClaim', name: 'src' } } } as unknown as PersistentVolumeClaim).spec?.dataSource?.name).to.equal('src');
  });

  // The bound docs/divergences.md gives ("What is cached of a claim"): a claim made as large as the
  // projection lets it be, in every field a tenant decides, with 3-byte characters and unique keys.
  it('a worst-case claim\'s projection takes at most 24 KiB of heap', function () {
    const N = 500;
    const long = '€'.repeat(3_000);
    const texts = Array.from({ length: N }, (_, i) => {
      const matchLabels: Record<string, string> = {};
      for (let k = 0; JSON.stringify({ matchLabels }).length < CLAIM_SELECTOR_KEPT - 30; k++) matchLabels[`${i}.${k}`] = '';
      const annotations = Object.fromEntries(CLAIM_ANNOTATIONS_KEPT.map((a) => [a, `${long}${i}`]));
      const source = { kind: `${long}${i}`, name: `${long}${i}` };
      return JSON.stringify({ metadata: { name: `c${i}`, namespace: 'ns', uid: `uid-${i}`, resourceVersion: `${i}`, annotations }, spec: { selector: { matchLabels }, volumeName: `${long}${i}`, dataSource: source, dataSourceRef: source, accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } });
    });
    collect();
    const before = process.memoryUsage().heapUsed;
    const kept = texts.map((t) => projectClaim(JSON.parse(t) as PersistentVolumeClaim));
    collect();
    const perClaim = (process.memoryUsage().heapUsed - before) / N;
    expect(kept[N - 1]!.spec?.selector?.matchLabels, 'the selector is kept').to.not.equal(undefined);
    expect(perClaim, 'bytes of heap per projected claim').to.be.below(24 * 1024);
  });

  it('cutValue: the first n characters and "…"', function () {
    expect(cutValue('abcdef', 3)).to.equal('abc…');
  });
});

describe('mergePatchDiff: the RFC 7386 merge patch from one object to another', function () {
  const cases: [string, unknown, unknown, unknown][] = [
    ['equal: nothing', { phase: 'Bound', capacity: { storage: '1Gi' } }, { phase: 'Bound', capacity: { storage: '1Gi' } }, undefined],
    ['a changed scalar', { phase: 'Pending' }, { phase: 'Bound' }, { phase: 'Bound' }],
    ['a removed key: null', { phase: 'Bound', accessModes: ['ReadWriteOnce'] }, { phase: 'Pending' }, { phase: 'Pending', accessModes: null }],
    ['undefined counts as absent', { phase: 'Bound', accessModes: ['ReadWriteOnce'] }, { phase: 'Bound', accessModes: undefined }, { accessModes: null }],
    ['a map merges key by key', { capacity: { storage: '1Gi', other: '1' } }, { capacity: { storage: '2Gi' } }, { capacity: { storage: '2Gi', other: null } }],
    ['an array is replaced whole', { accessModes: ['ReadWriteOnce'] }, { accessModes: ['ReadWriteOnce', 'ReadOnlyMany'] }, { accessModes: ['ReadWriteOnce', 'ReadOnlyMany'] }],
    ['an added key', {}, { capacity: { storage: '1Gi' } }, { capacity: { storage: '1Gi' } }],
    ['an object becoming a scalar', { a: { b: 1 } }, { a: 2 }, { a: 2 }],
  ];
  for (const [name, from, to, want] of cases) it(name, () => expect(mergePatchDiff(from, to)).to.deep.equal(want));

  // Fields only the server has (a projection dropped them) are in neither side: never in the patch.
  it('leaves out what neither side mentions', function () {
    expect(mergePatchDiff({ phase: 'Pending' }, { phase: 'Bound' })).to.not.have.property('conditions');
  });
});

