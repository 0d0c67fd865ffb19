import { expect } from 'chai';
import { logger } from '@topovol/shared';
import type { KubeObject } from '@topovol/shared';
import { CsiError, GrpcStatus } from '@topovol/shared/csi';
import { ClassFailureReports } from '../../src/source/class-failure-reports.js';

// A GetCapacity that fails for a class's parameters (InvalidArgument) or answers nonsense was only
// logged and counted: nothing on the class for `kubectl describe storageclass`.
describe('GetCapacity failures said on the class', function () {
  const said: string[] = [];
  const reports = (target: (c: string) => KubeObject | undefined = (c) => ({ kind: 'StorageClass', metadata: { name: c } })): ClassFailureReports =>
    new ClassFailureReports({
      events: {
        event: (o: KubeObject, type: string, reason: string) => {
          said.push(`${o.kind}/${o.metadata?.name} ${type} ${reason}`);
          return true;
        },
      },
      log: logger(),
      driverName: 'd.csi',
      target,
    });
  beforeEach(() => (said.length = 0));
  const invalid = new CsiError('GetCapacity', GrpcStatus.INVALID_ARGUMENT, 'no volume group small');

  it('a failure a retry will not mend: once per class until the class is measured again; transient codes never', function () {
    const r = reports();
    r.failed('fast', new CsiError('GetCapacity', GrpcStatus.UNAVAILABLE, 'socket gone'));
    r.failed('fast', new CsiError('GetCapacity', GrpcStatus.DEADLINE_EXCEEDED, 'slow'));
    expect(said, 'a restarting driver says nothing on the class').to.deep.equal([]);
    r.failed('fast', invalid);
    r.failed('fast', invalid);
    r.failed('slow', new Error('negative size in the answer'));
    expect(said).to.deep.equal(['StorageClass/fast Warning GetCapacityFailed', 'StorageClass/slow Warning GetCapacityFailed']);
    r.answered('fast');
    r.failed('fast', invalid);
    r.keepOnly(new Set(['fast']));
    r.failed('slow', invalid);
    expect(said).to.have.length(4);
  });

  it('no object to say it on (the <ephemeral> class has none): nothing said, nothing thrown', function () {
    reports(() => undefined).failed('<ephemeral>', invalid);
    expect(said).to.deep.equal([]);
  });
});
