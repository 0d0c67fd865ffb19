import { expect } from 'chai';
import fc from 'fast-check';
import type { Node, PersistentVolume, PersistentVolumeClaim, Pod } from '@topovol/shared';
import type { SelectedNodeConfirmation } from '../../src/binder/actions.js';
import { releaseRefuted, selectedNodeIssueRefuted } from '../../src/binder/verify-on-server.js';
import type { ServerView } from '../../src/binder/verify-on-server.js';

// What the server says, against what the cache-made decision needs before Released or a selected-node's removal.
const volume: PersistentVolume = { metadata: { name: 'v1' }, spec: { claimRef: { namespace: 'ns', name: 'c', uid: 'uid-c' } } };
const claimOnServer = (uid: string, volumeName?: string): PersistentVolumeClaim => ({ metadata: { name: 'c', namespace: 'ns', uid }, spec: { volumeName } });
const claim: PersistentVolumeClaim = { metadata: { name: 'c', namespace: 'ns', uid: 'uid-c', annotations: { 'volume.kubernetes.io/selected-node': 'n1' } }, spec: {} };
const nodeOnServer = (labels: Record<string, string> = {}): Node => ({ metadata: { name: 'n1', labels } });
const podOnServer = (nodeName?: string, phase = 'Pending'): Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { nodeName, containers: [], volumes: [{ name: 'v', persistentVolumeClaim: { claimName: 'c' } }] }, status: { phase } });
const zoneA = [{ matchLabelExpressions: [{ key: 'zone', values: ['a'] }] }];

describe('releaseRefuted', function () {
  const cases: { name: string; live: PersistentVolumeClaim | undefined; refuted: boolean }[] = [
    { name: 'the claim is gone on the server too: released', live: undefined, refuted: false },
    { name: 're-created under the same name (another uid): released', live: claimOnServer('uid-other', 'v1'), refuted: false },
    { name: 'bound to another volume: released', live: claimOnServer('uid-c', 'v2'), refuted: false },
    { name: 'still there, bound to this volume: refused', live: claimOnServer('uid-c', 'v1'), refuted: true },
    { name: 'still there, not bound yet: refused', live: claimOnServer('uid-c'), refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(releaseRefuted(volume, c.live) !== undefined).to.equal(c.refuted));

  it('never lets a volume be released while the server has its claim (same uid) bound to it or to nothing', function () {
    fc.assert(
      fc.property(fc.option(fc.record({ uid: fc.constantFrom('uid-c', 'uid-other'), volumeName: fc.option(fc.constantFrom('v1', 'v2'), { nil: undefined }) }), { nil: undefined }), (g) => {
        const live = g && claimOnServer(g.uid, g.volumeName);
        const holds = live?.metadata?.uid === 'uid-c' && (live.spec?.volumeName ?? 'v1') === 'v1';
        if (holds) expect(releaseRefuted(volume, live)).to.not.equal(undefined);
      }),
    );
  });
});

describe('selectedNodeIssueRefuted', function () {
  const cases: { name: string; confirm: SelectedNodeConfirmation; view: ServerView; refuted: boolean }[] = [
    { name: 'gone: the server has no such node either → remove', confirm: { issue: 'gone', node: 'n1' }, view: { kind: 'node', node: undefined }, refuted: false },
    { name: 'gone: the server has the node (the cache had not seen it) → keep', confirm: { issue: 'gone', node: 'n1' }, view: { kind: 'node', node: nodeOnServer() }, refuted: true },
    { name: 'notAllowed: the server\'s labels are outside allowedTopologies too → remove', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA }, view: { kind: 'node', node: nodeOnServer({ zone: 'b' }) }, refuted: false },
    { name: 'notAllowed: the server\'s labels match (the cache had old ones) → keep', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA }, view: { kind: 'node', node: nodeOnServer({ zone: 'a' }) }, refuted: true },
    { name: 'notAllowed: the node is not on the server → keep, decided again', confirm: { issue: 'notAllowed', node: 'n1', allowedTopologies: zoneA }, view: { kind: 'node', node: undefined }, refuted: true },
    { name: 'noConsumer: no pod on the server uses the claim → remove', confirm: { issue: 'noConsumer', node: 'n1' }, view: { kind: 'pods', pods: [] }, refuted: false },
    { name: 'noConsumer: a pod elsewhere → remove', confirm: { issue: 'noConsumer', node: 'n1' }, view: { kind: 'pods', pods: [podOnServer('n2', 'Running')] }, refuted: false },
    { name: 'noConsumer: an unscheduled pod on the server (the cache had not seen it) → keep', confirm: { issue: 'noConsumer', node: 'n1' }, view: { kind: 'pods', pods: [podOnServer()] }, refuted: true },
    { name: 'noConsumer: a pod placed on the selected node → keep', confirm: { issue: 'noConsumer', node: 'n1' }, view: { kind: 'pods', pods: [podOnServer('n1', 'Running')] }, refuted: true },
  ];
  for (const c of cases) it(c.name, () => expect(selectedNodeIssueRefuted(claim, c.confirm, c.view) !== undefined).to.equal(c.refuted));
});
