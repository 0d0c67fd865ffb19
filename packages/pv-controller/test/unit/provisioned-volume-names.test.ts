import { expect } from 'chai';
import fc from 'fast-check';
import type { PersistentVolumeClaim } from '@topovol/shared';
import { binderFlags, PROVISIONED_VOLUME_NAMES_FLAG } from '../../src/binder/binder-flags.js';
import { parseVolumeNamePatterns, provisionedVolumeNames, volumeNamePatternsOf } from '../../src/binder/provisioned-volume-names.js';

const UID = '4f6c1a2e-9b3d-4c5e-8f70-a1b2c3d4e5f6';
const claim = (uid?: string): PersistentVolumeClaim => ({ metadata: { namespace: 'ns', name: 'c', uid }, spec: {} });

describe('provisioned volume names (external-provisioner --volume-name-prefix, --volume-name-uuid-length)', function () {
  const cases: { entries: string[]; names: string[] }[] = [
    { entries: ['pvc'], names: [`pvc-${UID}`] },
    // makeVolumeName: dashes removed, then cut to the length.
    { entries: ['csi:16'], names: ['csi-4f6c1a2e9b3d4c5e'] },
    { entries: ['pvc:32'], names: ['pvc-4f6c1a2e9b3d4c5e8f70a1b2c3d4e5f6'] },
    { entries: ['pvc', 'vol.x-1', 'pvc'], names: [`pvc-${UID}`, `vol.x-1-${UID}`] },
    // A prefix ending in '-' makes a valid name too.
    { entries: ['pv-'], names: [`pv--${UID}`] },
    { entries: ['x'.repeat(216)], names: [`${'x'.repeat(216)}-${UID}`] },
  ];
  for (const c of cases) {
    it(`${c.entries.join(',')} → ${c.names.join(', ')}`, function () {
      const patterns = parseVolumeNamePatterns(c.entries);
      expect(patterns).to.not.be.a('string');
      expect(provisionedVolumeNames(claim(UID), patterns as Exclude<typeof patterns, string>)).to.deep.equal(c.names);
    });
  }

  it('defaults to pvc-<uid>, and names nothing for a claim without a uid', function () {
    expect(provisionedVolumeNames(claim(UID))).to.deep.equal([`pvc-${UID}`]);
    expect(provisionedVolumeNames(claim(undefined))).to.deep.equal([]);
    expect(volumeNamePatternsOf(undefined)).to.deep.equal([{ prefix: 'pvc' }]);
    expect(volumeNamePatternsOf(['a', 'b:4'])).to.deep.equal([{ prefix: 'a' }, { prefix: 'b', uuidLength: 4 }]);
  });

  const bad: { entries: string[]; why: RegExp }[] = [
    { entries: [], why: /at least one/ },
    { entries: [''], why: /not a valid volume name/ },
    { entries: ['PVC'], why: /not a valid volume name/ },
    { entries: ['pvc.'], why: /not a valid volume name/ },
    { entries: ['-pvc'], why: /not a valid volume name/ },
    { entries: ['a/b'], why: /not a valid volume name/ },
    { entries: ['x'.repeat(217)], why: /at most 253 characters/ },
    { entries: ['pvc:0'], why: /uuid length/ },
    { entries: ['pvc:33'], why: /uuid length/ },
    { entries: ['pvc:-1'], why: /uuid length/ },
    { entries: ['pvc:1.5'], why: /uuid length/ },
    { entries: ['pvc:4:4'], why: /expected prefix or prefix:uuid-length/ },
    { entries: Array.from({ length: 9 }, (_, i) => `p${i}`), why: /at most 8/ },
  ];
  for (const b of bad) {
    it(`refuses ${JSON.stringify(b.entries).slice(0, 40)}, and the flag says why`, function () {
      expect(parseVolumeNamePatterns(b.entries)).to.match(b.why);
      const spec = binderFlags.find((f) => f.name === PROVISIONED_VOLUME_NAMES_FLAG)!;
      expect(spec.validate!(b.entries)).to.match(b.why);
    });
  }

  it('property: every accepted entry gives a valid volume name (a DNS subdomain) for any uid', function () {
    const prefix = fc.stringMatching(/^[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?$/).filter((p) => !/\.\.|\.-|-\./.test(p));
    fc.assert(
      fc.property(fc.array(fc.tuple(prefix, fc.option(fc.integer({ min: 1, max: 32 }), { nil: undefined })), { minLength: 1, maxLength: 8 }), fc.uuid(), (entries, uid) => {
        const patterns = parseVolumeNamePatterns(entries.map(([p, n]) => (n === undefined ? p : `${p}:${n}`)));
        expect(patterns).to.not.be.a('string');
        for (const name of provisionedVolumeNames(claim(uid), patterns as Exclude<typeof patterns, string>)) {
          expect(name.length).to.be.at.most(253);
          expect(name).to.match(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
        }
      }),
    );
  });
});
