import { expect } from 'chai';
import type { PersistentVolume, PersistentVolumeClaim, StorageClass } from '@topovol/shared';
import { claimClass, claimClassUnset, isDefaultClass, pickDefaultClass, volumeClass } from '../../src/binder/claim-helpers.js';

// The class annotations upstream still reads, which a mutation run of the well-known names found no
// unit test of: a StorageClass is the default by the GA annotation or the beta one, "true" only
// (k8s.io/kubernetes pkg/apis/storage/v1/util/helpers.go IsDefaultAnnotation), and a claim's or a
// volume's class is its beta annotation before spec.storageClassName (k8s.io/component-helpers
// storage/volume GetPersistentVolumeClaimClass, GetPersistentVolumeClass).

const sc = (name: string, annotations: Record<string, string>): StorageClass => ({ apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name, annotations }, provisioner: 'p' });

describe('class annotation edges', function () {
  const cases: [string, Record<string, string>, boolean][] = [
    ['the GA annotation "true"', { 'storageclass.kubernetes.io/is-default-class': 'true' }, true],
    ['the beta annotation "true" alone', { 'storageclass.beta.kubernetes.io/is-default-class': 'true' }, true],
    ['the GA annotation "false", the beta one "true"', { 'storageclass.kubernetes.io/is-default-class': 'false', 'storageclass.beta.kubernetes.io/is-default-class': 'true' }, true],
    ['the beta annotation "True" (not exactly "true")', { 'storageclass.beta.kubernetes.io/is-default-class': 'True' }, false],
    ['neither', {}, false],
  ];
  for (const [what, annotations, want] of cases) it(`${what}: ${want ? 'default' : 'not default'}`, () => expect(isDefaultClass(sc('c', annotations))).to.equal(want));

  it('a class marked default by the beta annotation alone is the one a class-less claim gets', function () {
    const picked = pickDefaultClass([sc('plain', {}), sc('legacy-default', { 'storageclass.beta.kubernetes.io/is-default-class': 'true' })]);
    expect(picked?.metadata?.name).to.equal('legacy-default');
  });

  describe('the beta storage-class annotation', function () {
    const BETA = 'volume.beta.kubernetes.io/storage-class';
    const claim = (annotations: Record<string, string> | undefined, storageClassName?: string): PersistentVolumeClaim => ({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'c', namespace: 'ns', ...(annotations ? { annotations } : {}) },
      spec: { ...(storageClassName === undefined ? {} : { storageClassName }) },
    });
    const volume = (annotations: Record<string, string> | undefined, storageClassName?: string): PersistentVolume => ({
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: 'v', ...(annotations ? { annotations } : {}) },
      spec: { ...(storageClassName === undefined ? {} : { storageClassName }) },
    });
    // [annotations, spec.storageClassName, the class, whether the class is unset]
    const cases: [Record<string, string> | undefined, string | undefined, string, boolean][] = [
      [{ [BETA]: 'legacy' }, undefined, 'legacy', false],
      [{ [BETA]: 'legacy' }, 'fast', 'legacy', false],
      [{ [BETA]: '' }, 'fast', '', false],
      [undefined, 'fast', 'fast', false],
      [undefined, undefined, '', true],
    ];
    for (const [annotations, spec, want, unset] of cases) {
      it(`annotation ${JSON.stringify(annotations?.[BETA])}, storageClassName ${JSON.stringify(spec)}: class "${want}"${unset ? ', unset' : ''}`, function () {
        expect(claimClass(claim(annotations, spec))).to.equal(want);
        expect(volumeClass(volume(annotations, spec))).to.equal(want);
        expect(claimClassUnset(claim(annotations, spec))).to.equal(unset);
      });
    }
  });
});
