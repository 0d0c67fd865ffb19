import { expect } from 'chai';
import type { Pod } from '../../src/types/wire.js';
import { isPodTerminated } from '../../src/volumes/pod-claims.js';

// A pod being deleted still holds its claims while any of its containers runs: init, regular or
// ephemeral (IsPodTerminated and notRunning in pkg/volume/util/util.go). A claim whose consumer is
// taken for gone too early loses its pinned node or has its volume released under a running pod.

type Status = NonNullable<NonNullable<Pod['status']>['containerStatuses']>[number];
const running: Status = { name: 'x', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } };
const waiting: Status = { ...running, ready: false, state: { waiting: { reason: 'ContainerCreating' } } };
const terminated: Status = { ...running, ready: false, state: { terminated: { exitCode: 0 } } };
const deleting = (status: NonNullable<Pod['status']>): Pod => ({ metadata: { name: 'p', namespace: 'ns', deletionTimestamp: '2026-01-01T00:00:00Z' }, spec: { containers: [] }, status: { phase: 'Running', ...status } });

describe('isPodTerminated: a pod being deleted', function () {
  const cases: [string, NonNullable<Pod['status']>, boolean][] = [
    ['an init container still running', { initContainerStatuses: [running], containerStatuses: [terminated] }, false],
    ['an ephemeral container still running', { containerStatuses: [terminated], ephemeralContainerStatuses: [running] }, false],
    ['a container still running', { containerStatuses: [terminated, running] }, false],
    ['every container waiting or terminated', { initContainerStatuses: [terminated], containerStatuses: [waiting, terminated], ephemeralContainerStatuses: [waiting] }, true],
    ['no container statuses at all', {}, true],
  ];
  for (const [what, status, want] of cases) {
    it(`${what}: ${want ? 'terminated' : 'still running'}`, function () {
      expect(isPodTerminated(deleting(status))).to.equal(want);
    });
  }
});
