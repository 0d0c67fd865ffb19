import { expect } from 'chai';
import {
  CLAIM_ANNOTATION_VALUE_KEPT,
  CLAIM_NAME_KEPT,
  CLAIM_SELECTOR_KEPT,
  EVENT_MESSAGE_KEPT,
  projectClaim,
  projectEvent,
  projectNode,
  projectPod,
  selectorTooLargeToCache,
} from '../../src/informer/projections.js';
import type { Event, PersistentVolumeClaim, Pod } from '../../src/types/wire.js';

// What the informers' projections keep of claims, pods, nodes and Events: the fields the
// controllers decide on must come through whole, and limits cut only what is past them.

describe('projection edges: what the caches keep', function () {
  it('projections keep the deletionTimestamp of claims, pods and nodes (a deletion under way must be seen)', function () {
    const deleting = { name: 'x', namespace: 'ns', deletionTimestamp: '2026-11-30T00:00:00Z' };
    expect(projectClaim({ metadata: deleting }).metadata?.deletionTimestamp).to.equal(deleting.deletionTimestamp);
    expect(projectPod({ metadata: deleting }).metadata?.deletionTimestamp).to.equal(deleting.deletionTimestamp);
    expect(projectNode({ metadata: { name: 'n', deletionTimestamp: deleting.deletionTimestamp } }).metadata?.deletionTimestamp).to.equal(deleting.deletionTimestamp);
  });

  it('values exactly at the limits are kept as they are: a volume name, a claim annotation, a selector, an Event message', function () {
    const name = 'v'.repeat(CLAIM_NAME_KEPT);
    const annotation = 's'.repeat(CLAIM_ANNOTATION_VALUE_KEPT);
    const matchLabels: Record<string, string> = { k: '' };
    matchLabels.k = 'x'.repeat(CLAIM_SELECTOR_KEPT - JSON.stringify({ matchLabels }).length);
    const selector = { matchLabels };
    expect(JSON.stringify(selector)).to.have.length(CLAIM_SELECTOR_KEPT);
    const c = projectClaim({
      metadata: { name: 'c', namespace: 'ns', annotations: { 'volume.kubernetes.io/selected-node': annotation } },
      spec: { volumeName: name, selector },
    } as PersistentVolumeClaim);
    expect(c.spec?.volumeName).to.equal(name);
    expect(c.metadata?.annotations?.['volume.kubernetes.io/selected-node']).to.equal(annotation);
    expect(c.spec?.selector).to.deep.equal(selector);
    expect(selectorTooLargeToCache(c.spec?.selector)).to.equal(false);
    const message = 'm'.repeat(EVENT_MESSAGE_KEPT);
    expect(projectEvent({ metadata: { name: 'e' }, involvedObject: {}, message } as Event).message).to.equal(message);
  });

  it('selectorTooLargeToCache: false for a claim without a selector, or with labels only', function () {
    expect(selectorTooLargeToCache(undefined)).to.equal(false);
    expect(selectorTooLargeToCache(null)).to.equal(false);
    expect(selectorTooLargeToCache({})).to.equal(false);
    expect(selectorTooLargeToCache(projectClaim({ metadata: { name: 'c' }, spec: { selector: { matchLabels: { a: 'b' } } } } as PersistentVolumeClaim).spec?.selector)).to.equal(false);
  });

  it("projections keep a claim's access modes once each, a pod's controller owner only and its PodScheduled condition only", function () {
    const c = projectClaim({ metadata: { name: 'c' }, spec: { accessModes: ['ReadWriteOnce', 'ReadWriteOnce', 'ReadOnlyMany', 'ReadWriteOnce'] } } as PersistentVolumeClaim);
    expect(c.spec?.accessModes).to.deep.equal(['ReadWriteOnce', 'ReadOnlyMany']);
    const p = projectPod({
      metadata: {
        name: 'p',
        namespace: 'ns',
        ownerReferences: [
          { apiVersion: 'v1', kind: 'ConfigMap', name: 'cm', uid: 'u1' },
          { apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'db', uid: 'u2', controller: true },
        ],
      },
      spec: { containers: [] },
      status: {
        conditions: [
          { type: 'Ready', status: 'True' },
          { type: 'PodScheduled', status: 'True' },
        ],
      },
    } as Pod);
    expect(p.metadata?.ownerReferences?.map((o) => o.name)).to.deep.equal(['db']);
    expect(p.status?.conditions?.map((x) => x.type)).to.deep.equal(['PodScheduled']);
  });

  it("keeps a pod's nominated node only when it uses claims (the rollback loop's doubt of an older Unschedulable condition)", function () {
    const nominated = (volumes: NonNullable<Pod['spec']>['volumes']): Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], volumes }, status: { nominatedNodeName: 'a' } });
    expect(projectPod(nominated([{ name: 'd', persistentVolumeClaim: { claimName: 'c1' } }])).status?.nominatedNodeName).to.equal('a');
    expect(projectPod(nominated([{ name: 'e', ephemeral: {} }])).status?.nominatedNodeName).to.equal('a');
    expect(projectPod(nominated([{ name: 'cfg', configMap: { name: 'x' } }])).status).to.not.have.property('nominatedNodeName');
  });
});
