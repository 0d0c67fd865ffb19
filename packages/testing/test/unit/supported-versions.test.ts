import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../src/repo-root.js';

const read = (file: string): string => readFileSync(path.join(repoRoot(), file), 'utf8');

// docs/install.md promises a range of Kubernetes releases; every minor release in it must be one the
// suites really run against: hack/test.sh's default, and each of hack/skew.sh's older releases.
describe('supported Kubernetes versions', function () {
  const script = read('hack/control-plane-binaries.sh');
  const newest = /K8S_VERSION="\$\{TOPOVOL_K8S_VERSION:-(v[\d.]+)\}"/.exec(script)?.[1];
  const older = /versions <<< "\$\{TOPOVOL_K8S_VERSION:-(v[\d. v]+)\}"/.exec(read('hack/skew.sh'))?.[1]?.split(' ') ?? [];
  const pins = [...script.matchAll(/^\s+(v[\d.]+)\) K8S_MODULE_DIR="\$HACK_DIR\/(tools\/[\w.-]+)"/gm)].map((m) => ({ version: m[1]!, dir: m[2]! }));
  const minor = (v: string): number => Number(/^v1\.(\d+)\./.exec(v)?.[1]);
  const oldest = [...older].sort((a, b) => minor(a) - minor(b))[0];

  it('each pinned release builds from a module that requires exactly that kubernetes', function () {
    expect(older, "hack/skew.sh's releases").to.not.be.empty;
    expect(pins.map((p) => p.version)).to.have.members([newest, ...older]);
    // The refusal of an unpinned release lists the pinned ones.
    const listed = /is not pinned here \(([^)]*)\)/.exec(script)?.[1]?.match(/v[\d.]*\d/g) ?? [];
    expect(listed, "control-plane-binaries.sh's refusal").to.have.members(pins.map((p) => p.version));
    for (const { version, dir } of pins) {
      const goMod = read(`hack/${dir}/go.mod`);
      expect(goMod, `hack/${dir}/go.mod`).to.match(new RegExp(`^(require )?\\s*k8s\\.io/kubernetes ${version.replace(/\./g, '\\.')}( // indirect)?$`, 'm'));
      // The staging modules (k8s.io/api, client-go, ...) must be the same release, as v0.<minor>.<patch>.
      const staging = [...goMod.matchAll(/^\s+(k8s\.io\/[\w.-]+) => k8s\.io\/[\w.-]+ (\S+)$/gm)].map((m) => `${m[1]!} ${m[2]!}`);
      expect(staging, `hack/${dir}/go.mod replaces`).to.have.length.above(20);
      expect(staging.filter((line) => !line.endsWith(` ${version.replace(/^v1\./, 'v0.')}`)), `hack/${dir}/go.mod replaces of another release`).to.deep.equal([]);
    }
  });

  it('has a pinned release for every minor release between the oldest and the newest', function () {
    const minors = pins.map((p) => minor(p.version)).sort((a, b) => a - b);
    expect(minors, 'one pin per minor release, no gap').to.deep.equal(Array.from({ length: minor(newest!) - minor(oldest!) + 1 }, (_, i) => minor(oldest!) + i));
  });

  it('docs/install.md names both ends of the tested range, every release the skew run uses, and the skew run', function () {
    const doc = read('docs/install.md');
    const section = /## Supported Kubernetes versions\n([\s\S]*?)\n## /.exec(doc)?.[1];
    expect(section, 'a "Supported Kubernetes versions" section').to.be.a('string');
    expect(section).to.include(`1.${minor(oldest!)} to 1.${minor(newest!)}`);
    for (const v of [newest!, ...older]) expect(section).to.include(v);
    expect(section).to.include('hack/skew.sh');
  });
});
