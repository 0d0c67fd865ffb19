import { expect } from 'chai';
import type { PersistentVolume, PersistentVolumeClaim } from '@topovol/shared';
import { bindingViolations } from '../../src/binding-invariants.js';

const claim = (name: string, volumeName?: string, phase = volumeName ? 'Bound' : 'Pending'): PersistentVolumeClaim => ({ metadata: { namespace: 'ns', name, uid: `uid-${name}` }, spec: { ...(volumeName ? { volumeName } : {}) }, status: { phase } });
const volume = (name: string, claimName?: string, uid = claimName ? `uid-${claimName}` : undefined): PersistentVolume => ({ metadata: { name }, spec: { ...(claimName ? { claimRef: { namespace: 'ns', name: claimName, ...(uid ? { uid } : {}) } } : {}) } });

describe('testing: binding invariants (checked after every fault scenario)', function () {
  const cases: { name: string; claims: PersistentVolumeClaim[]; volumes: PersistentVolume[]; before?: [string, string][]; want: RegExp[] }[] = [
    { name: 'consistent pairs and a Pending claim: nothing', claims: [claim('a', 'v1'), claim('b')], volumes: [volume('v1', 'a'), volume('v2')], want: [] },
    { name: 'one volume, two Bound claims', claims: [claim('a', 'v1'), claim('b', 'v1')], volumes: [volume('v1', 'a')], want: [/bound by two claims/, /claimRef is ns\/a/] },
    { name: 'volume points elsewhere', claims: [claim('a', 'v1')], volumes: [volume('v1', 'b')], want: [/whose claimRef is ns\/b/] },
    { name: 'volume points to an older claim of the same name', claims: [claim('a', 'v1')], volumes: [volume('v1', 'a', 'old-uid')], want: [/uid old-uid/] },
    { name: 'volume missing', claims: [claim('a', 'v1')], volumes: [], want: [/does not exist/] },
    { name: 'a Lost claim', claims: [claim('a', 'v1', 'Lost')], volumes: [volume('v1', 'b')], want: [/ns\/a is Lost/] },
    { name: 'Bound without volumeName', claims: [claim('a', undefined, 'Bound')], volumes: [], want: [/without spec.volumeName/] },
    { name: 'a claim Bound before is gone or moved', claims: [claim('b', 'v9')], volumes: [volume('v9', 'b')], before: [['ns/a', 'v1'], ['ns/b', 'v2']], want: [/ns\/a, Bound to v1 before the faults, is gone/, /ns\/b was Bound to v2/] },
  ];
  for (const c of cases) {
    it(c.name, function () {
      const got = bindingViolations(c.claims, c.volumes, new Map(c.before ?? []));
      expect(got).to.have.length(c.want.length, got.join('\n'));
      c.want.forEach((re, i) => expect(got[i]).to.match(re));
    });
  }
});
