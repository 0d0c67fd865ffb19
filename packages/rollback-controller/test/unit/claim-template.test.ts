import { expect } from 'chai';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { claimFromTemplate, claimTemplate } from '../../src/rollback/claim-template.js';

const bound = (annotations: Record<string, string>): PersistentVolumeClaim => ({
  metadata: {
    name: 'data-web-0',
    namespace: 'ns',
    uid: 'uid-1',
    resourceVersion: '7',
    labels: { app: 'web' },
    annotations,
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'uid-sts' }],
  },
  spec: { accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } }, volumeName: 'pv-1' },
  status: { phase: 'Bound' },
});

describe('rollback claim template: the claim as it will be re-created', function () {
  it('drops binding and scheduling state, keeps what the user wrote', function () {
    const t = claimTemplate(
      bound({
        'pv.kubernetes.io/bind-completed': 'yes',
        'pv.kubernetes.io/bound-by-controller': 'yes',
        'volume.kubernetes.io/selected-node': 'node-a',
        'volume.kubernetes.io/storage-provisioner': 'csi.example.com',
        'volume.beta.kubernetes.io/storage-provisioner': 'csi.example.com',
        'pv.kubernetes.io/migrated-to': 'pd.csi.storage.gke.io',
        'example.com/team': 'storage',
      }),
    );
    expect(t.metadata).to.deep.equal({ labels: { app: 'web' }, annotations: { 'example.com/team': 'storage' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'StatefulSet', name: 'web', uid: 'uid-sts' }] });
    expect(t.spec).to.deep.equal({ accessModes: ['ReadWriteOnce'], storageClassName: 'fast', resources: { requests: { storage: '1Gi' } } });
  });

  it('no annotations left: none at all, not an empty map', function () {
    expect(claimTemplate(bound({ 'volume.kubernetes.io/selected-node': 'node-a' })).metadata.annotations).to.equal(undefined);
  });

  it('the template and the claim made from it share nothing with their sources', function () {
    const source = bound({});
    const t = claimTemplate(source);
    t.spec.resources!.requests!.storage = '2Gi';
    expect(source.spec?.resources?.requests?.storage).to.equal('1Gi');
    const c = claimFromTemplate(t, 'ns2', 'data-web-0');
    c.spec!.accessModes!.push('ReadOnlyMany');
    expect(t.spec.accessModes).to.deep.equal(['ReadWriteOnce']);
    expect(c.metadata).to.include({ name: 'data-web-0', namespace: 'ns2' });
    expect(c.metadata?.uid).to.equal(undefined);
    expect(c.metadata?.resourceVersion).to.equal(undefined);
  });
});
