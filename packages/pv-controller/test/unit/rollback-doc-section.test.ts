import { expect } from 'chai';
import { rollbackSection } from '../../bench/rollback-doc-section.js';
import type { RollbackDocRecord } from '../../bench/rollback-doc-section.js';

describe('docs/benchmarks.md: the rollback section', function () {
  const rec: RollbackDocRecord = {
    benchmark: 'rollback',
    date: '2026-11-29T01:00:00.000Z',
    machine: '2 CPUs',
    versions: ['kube-apiserver v1.37.2', 'topovol abc'],
    managerArgs: [],
    report: 'rollback-2026-11-29T010000Z.txt',
    runs: [
      { run: 1, outcome: 'recovered', seconds: { rollback: 0.04, claimRecreated: 1.2, recovered: 3.9 } },
      { run: 2, outcome: 'recovered', seconds: { rollback: 0.0, recovered: 3.1 } },
      { run: 3, outcome: 'not-recovered', seconds: { rollback: 0.1 } },
    ],
    twin: { outcome: 'not-rolled-back', refusedSeconds: 0.02, watched: 'watched for the slowest rollback above, 0.1 s, plus --twin-window 60 s' },
  };

  it('prints every run, the recovery over the runs that recovered, and the safety twin', function () {
    const doc = rollbackSection(rec);
    expect(doc).to.contain('| 1 | recovered | 0.0 | 1.2 | - | - | - | - | 3.9 |');
    expect(doc).to.contain('| 3 | not-recovered | 0.1 | - | - | - | - | - | - |');
    expect(doc).to.contain('Recovered in 2 of 3 runs: t1 − t0 min 3.1 s, median 3.5 s, max 3.9 s.');
    expect(doc).to.contain('**not rolled back** (watched for the slowest rollback above, 0.1 s, plus --twin-window 60 s); `ProvisioningRollbackRefused` at 0.0 s.');
    expect(doc).to.contain('hack/bench/results/rollback-2026-11-29T010000Z.txt');
    expect(doc).to.contain('with every loop flag at its default');
  });

  it('says so when a twin was rolled back, and prints nothing without a record', function () {
    expect(rollbackSection({ ...rec, twin: { outcome: 'rolled-back', rollbackSeconds: 0.5 } })).to.contain('**ROLLED BACK although node a reported the volume in use: a safety failure**; `ProvisioningRollback` at 0.5 s.');
    const none = rollbackSection({ ...rec, runs: [{ run: 1, outcome: 'not-recovered', seconds: {} }] });
    expect(none).to.contain('Recovered in none of 1 runs.');
    expect(none).to.not.contain('backoff');
    expect(rollbackSection(undefined)).to.equal('');
  });
});
