import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';

/**
 * nock patches Node's http module for the whole process once it is loaded, whether or not a test
 * defines an interceptor, and the patched client frees sockets on a different schedule. A socket
 * destroyed with an error after its keep-alive release threw out of the process with real http
 * and not under nock (packages/shared/src/client/http-transport.ts, `abandon`): the unit suite
 * passed while the manager crashed. So the files that use nock run in a mocha process of their
 * own (.mocharc.unit-nock.json), and only those files are named `*.nock.test.ts`.
 */
function unitTestSources(): string[] {
  const packages = path.join(repoRoot(), 'packages');
  return readdirSync(packages).flatMap((p) => {
    const dir = path.join(packages, p, 'test', 'unit');
    try {
      return readdirSync(dir, { recursive: true, encoding: 'utf8' })
        .filter((f) => f.endsWith('.test.ts'))
        .map((f) => path.join(dir, f));
    } catch {
      return [];
    }
  });
}

const USES_NOCK = /from ['"]nock['"]|require\(['"]nock['"]\)|import\(['"]nock['"]\)/;

describe('unit tests that load nock run apart from the rest', function () {
  it('a file is named *.nock.test.ts exactly when it loads nock', function () {
    const sources = unitTestSources();
    expect(sources.length).to.be.greaterThan(100);
    const misnamed = sources
      .filter((f) => USES_NOCK.test(readFileSync(f, 'utf8')) !== f.endsWith('.nock.test.ts'))
      .map((f) => path.relative(repoRoot(), f));
    expect(misnamed).to.deep.equal([]);
  });

  it('the two mocha configurations split the unit files by that name', function () {
    const read = (name: string): { spec: string[]; ignore?: string[] } => JSON.parse(readFileSync(path.join(repoRoot(), name), 'utf8')) as { spec: string[]; ignore?: string[] };
    const plain = read('.mocharc.unit.json');
    const nock = read('.mocharc.unit-nock.json');
    expect(plain.ignore).to.deep.equal(['packages/*/dist/test/unit/**/*.nock.test.js']);
    expect(nock.spec).to.deep.equal(['packages/*/dist/test/unit/**/*.nock.test.js']);
    const scripts = (JSON.parse(readFileSync(path.join(repoRoot(), 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['test:unit']).to.include('.mocharc.unit.json').and.include('.mocharc.unit-nock.json');
  });
});
