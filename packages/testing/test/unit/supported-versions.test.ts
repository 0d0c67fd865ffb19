import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../src/repo-root.js';

const read = (file: string): string => readFileSync(path.join(repoRoot(), file), 'utf8');

// docs/install.md promises a range of Kubernetes releases; the two ends must be the releases the
// suites really run against: hack/test.sh's default and hack/skew.sh's oldest.
describe('supported Kubernetes versions', function () {
  const script = read('hack/control-plane-binaries.sh');
  const newest = /K8S_VERSION="\$\{TOPOVOL_K8S_VERSION:-(v[\d.]+)\}"/.exec(script)?.[1];
  const oldest = /TOPOVOL_K8S_VERSION="\$\{TOPOVOL_K8S_VERSION:-(v[\d.]+)\}"/.exec(read('hack/skew.sh'))?.[1];
  const pins = [...script.matchAll(/^\s+(v[\d.]+)\) K8S_MODULE_DIR="\$HACK_DIR\/(tools\/[\w.-]+)"/gm)].map((m) => ({ version: m[1]!, dir: m[2]! }));

  it('each pinned release builds from a module that requires exactly that kubernetes', function () {
    expect(pins.map((p) => p.version)).to.have.members([newest, oldest]);
    for (const { version, dir } of pins) {
      const goMod = read(`hack/${dir}/go.mod`);
      expect(goMod, `hack/${dir}/go.mod`).to.match(new RegExp(`^(require )?\\s*k8s\\.io/kubernetes ${version.replace(/\./g, '\\.')}( // indirect)?$`, 'm'));
      // The staging modules (k8s.io/api, client-go, ...) must be the same release, as v0.<minor>.<patch>.
      const staging = [...goMod.matchAll(/^\s+(k8s\.io\/[\w.-]+) => k8s\.io\/[\w.-]+ (\S+)$/gm)].map((m) => `${m[1]!} ${m[2]!}`);
      expect(staging, `hack/${dir}/go.mod replaces`).to.have.length.above(20);
      expect(staging.filter((line) => !line.endsWith(` ${version.replace(/^v1\./, 'v0.')}`)), `hack/${dir}/go.mod replaces of another release`).to.deep.equal([]);
    }
  });

  it('docs/install.md names both ends of the tested range, and the skew run', function () {
    const doc = read('docs/install.md');
    const section = /## Supported Kubernetes versions\n([\s\S]*?)\n## /.exec(doc)?.[1];
    expect(section, 'a "Supported Kubernetes versions" section').to.be.a('string');
    const minor = (v: string): string => v.replace(/^v(\d+\.\d+)\..*$/, '$1');
    expect(section).to.include(`${minor(oldest!)} to ${minor(newest!)}`);
    expect(section).to.include(oldest!).and.include(newest!).and.include('hack/skew.sh');
  });
});
