import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { repoRoot } from '../../src/repo-root.js';

// On a fresh clone, two commands: one runs the manager with a demo, one runs every test (and .ci/run
// calls that same one).
describe('README Quick start', function () {
  it('has exactly two commands: the demo and the whole test suite, which .ci/run runs', function () {
    const readme = readFileSync(path.join(repoRoot(), 'README.md'), 'utf8');
    const block = /## Quick start\s+```sh\n([\s\S]*?)```/.exec(readme)?.[1];
    expect(block, 'a sh block under "## Quick start"').to.be.a('string');
    const commands = block!.split('\n').map((l) => l.replace(/#.*/, '').trim()).filter((l) => l !== '');
    expect(commands).to.deep.equal(['./hack/demo.sh', './hack/test.sh']);
    expect(readFileSync(path.join(repoRoot(), '.ci/run'), 'utf8')).to.match(/hack\/test\.sh/);
  });
});
