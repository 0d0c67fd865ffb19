import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { repoRoot } from '@topovol/testing';
import { figureSource, figuresIn, isSourced } from '../../bench/doc-figures.js';

const read = (rel: string): string => readFileSync(path.join(repoRoot(), rel), 'utf8');

/**
 * Figures in the README and docs that are not measurements of Topovol's speed or memory, so that
 * docs/benchmarks.md need not have them: defaults and limits (in our code, etcd's or Kubernetes'),
 * test and bench settings, sizes a test measures and asserts, estimates of how long a command runs.
 * A figure missing from docs/benchmarks.md and from this list fails the test below: cite it from
 * there, or, if it measures nothing about Topovol's speed or memory, add it here with why. A listed
 * figure may also round to a number a record happens to have (a "10 s" default beside a 10.2 s
 * run): it stays listed, so that taking a record again never asks to add or drop entries.
 */
const NOT_BENCHMARK_FIGURES: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  'README.md': {
    '10 minutes': 'estimate: building the control-plane binaries on first use',
    '1.5 minutes': 'estimate: how long the demo runs',
  },
  'docs/architecture.md': {
    '10 s': 'limit: PAGE_RETRY_MAX_WAIT_MS, the longest Retry-After a paged list waits out',
    '1000 s': "default: client-go's per-item work-queue backoff cap",
    '1.5 MB': "limit: etcd's default --max-request-bytes, the largest object",
    '16 MiB': 'limit: LIST_PAGE_MAX_BYTES',
    '64 MiB': 'limit: ONE_OBJECT_MAX_BYTES',
    '1 KB': 'size: a volume object (815 bytes in hack/bench/README.md, "Start-up at 100,000")',
    '800 ms': 'setting: REFLECTOR_BACKOFF.startMs',
    '2 minutes': 'setting: REFLECTOR_BACKOFF.resetAfterMs',
  },
  'docs/capacity-status.md': {
    '368 KB': 'size the capacity-status scale test measures',
    '70 KB': 'size the capacity-status scale test measures',
    '1.5 MiB': "limit: etcd's default --max-request-bytes",
    '1 MiB': 'limit the capacity-status scale test asserts',
    '3 minutes': 'arithmetic from the default poll and expiry',
  },
  'docs/capacity.md': {
    '10s': "default: --capacity-timeout, GetCapacity's deadline",
    '100 ms': "setting: the capacity bench's volume creation rate",
    '15 minutes': "setting: an alert rule's for:",
    '10 minutes': "setting: TopovolCapacityNodeMissing's for:",
    '350 KB': 'size the capacity-status scale test measures',
  },
  'docs/divergences.md': {
    '10 s': "defaults: the SubjectAccessReview verdict cache, the certificate reload, --capacity-timeout, a start-up retry's cap",
    '10 minutes': 'default: --stale-selected-node-grace',
    '10 min': 'default: --capacity-unimplemented-retry',
    '1,000 s': "default: client-go's per-item work-queue backoff cap",
    '1.5 MB': "limit: etcd's default --max-request-bytes, the largest object",
    '256 KiB': "limit: Kubernetes' total size of an object's annotations",
    '24 KiB': 'limit claim-projection.test.ts asserts for a worst-case projected claim',
  },
  'docs/rollback.md': {
    '256 KiB': 'limit: RECORD_TEMPLATES_BUDGET_BYTES, what a ProvisioningRollback keeps of its claims',
    '600 s': "default: kube-scheduler's VolumeBinding bindTimeoutSeconds",
  },
  'docs/install.md': {
    '10 s': "defaults: the SubjectAccessReview verdict cache, the certificate reload, the shutdown margin over --shutdown-timeout",
    '15 minutes': "setting: an alert rule's for:",
    '1.5 MB': "limit: etcd's default --max-request-bytes",
    '16 MiB': 'limit: LIST_PAGE_MAX_BYTES',
    '256 KiB': "limit: Kubernetes' total size of an object's annotations",
  },
  'docs/reliability.md': {
    '10 s': "setting: the soak's RSS sampling period",
    '700 KB': "setting: a test's claim size (binder-large-claims.test.ts)",
    '200 KiB': "setting: a test's claim annotation size (binder-large-claims.test.ts)",
    '2 KB': 'limit binder-large-claims.test.ts asserts for the cached copy',
    '180 s': "setting: a scenario's timeout",
    '240 s': "setting: a scenario's timeout (after an etcd restart)",
    '10 min': 'setting: the soak duration',
    '80 MB': "size: the test command's API server audit log",
  },
  'docs/status.md': {
    '10 s': "settings: a test's Lease duration, a status expiry, timeouts",
    '120 s': "default: grpc-js's reconnect backoff cap",
    '1000 s': "default: client-go's per-item work-queue backoff cap",
    '600 s': "default: kube-scheduler's VolumeBinding bindTimeoutSeconds",
    '16 minutes': "default: client-go's per-item work-queue backoff cap (1000 s)",
    '256 KiB': 'limit: RECORD_TEMPLATES_BUDGET_BYTES, what a ProvisioningRollback keeps of its claims',
    '1.5 minutes': 'estimate: how long the e2e suite runs',
    '3 minutes': 'estimate: how long the differential suite runs',
    '1 MiB': 'limit the capacity-status scale test asserts',
    '1.4 MB': "setting: a test's forged Event size",
    '1.5 MB': "limit: etcd's default --max-request-bytes",
    '16 MiB': 'limit: LIST_PAGE_MAX_BYTES',
    '450 KB': "setting: a test's forged Event size",
    '1.2 MB': "setting: a test's forged pod size",
    '24 KiB': 'limit claim-projection.test.ts asserts for a worst-case projected claim',
    '700 KB': "setting: a test's claim size (binder-large-claims.test.ts)",
    '2 KB': 'limit binder-large-claims.test.ts asserts for the cached copy',
    '45 s': "a test's wait: zonal-pv-upgrade's retry after a policy's lift",
  },
  'docs/adr/0010-sharded-capacity-status.md': {
    '5 MB': 'arithmetic: 1,000 nodes × 10 classes in one object',
    '1.5 MiB': "limit: etcd's default --max-request-bytes",
    '368 KB': 'size the capacity-status scale test measures',
    '70 KB': 'size the capacity-status scale test measures',
    '710 KB': 'size the capacity-status scale test measures',
    '1 MiB': 'limit the capacity-status scale test asserts',
    '350 KB': 'size the capacity-status scale test measures',
  },
  'docs/adr/0018-metrics-behind-delegated-auth.md': {
    '10 s': "default: the SubjectAccessReview verdict cache (k8s.io/apiserver's)",
  },
};

const CHAOS_BEGIN = '<!-- chaos-results:begin -->';
const CHAOS_END = '<!-- chaos-results:end -->';

/** docs/reliability.md's results block, which hack/chaos.sh --record writes from its own run. */
function chaosBlock(doc: string): { block: string; rest: string } {
  const a = doc.indexOf(CHAOS_BEGIN);
  const b = doc.indexOf(CHAOS_END);
  expect(a, 'docs/reliability.md has its chaos-results markers').to.be.greaterThan(-1);
  expect(b).to.be.greaterThan(a);
  const block = doc.slice(a + CHAOS_BEGIN.length, b);
  // Blank the block's lines (kept, so that line numbers stay right): its figures have their own source.
  return { block, rest: doc.slice(0, a) + block.replace(/[^\n]/g, ' ') + doc.slice(b) };
}

function docFiles(): string[] {
  const root = repoRoot();
  const docs = readdirSync(path.join(root, 'docs')).filter((f) => f.endsWith('.md') && f !== 'benchmarks.md').map((f) => `docs/${f}`);
  const adrs = readdirSync(path.join(root, 'docs', 'adr')).filter((f) => f.endsWith('.md')).map((f) => `docs/adr/${f}`);
  return ['README.md', ...docs, ...adrs];
}

describe('figures in the README and docs come from the benchmarks', function () {
  it('finds figures in prose, ranges and tables whose header names the unit; skips code', function () {
    const doc = [
      'The first binding took 0.8 s, peak RSS 977-1,158 MiB, 81% of the ceiling, 0.94x of N = 10000.',
      'Flags such as `--resync=15s` and v1.37.2 are not figures; 10,000 claims have no unit.',
      '',
      '| binder | N | peak RSS MiB | first s | of ceiling |',
      '| --- | --- | --- | --- | --- |',
      '| Topovol | 10000 | 290.2 | 0.4 | 77% |',
      '',
      '```',
      'took 99 s',
      '```',
    ].join('\n');
    expect(figuresIn(doc).map((f) => [f.text, f.unit, f.line])).to.deep.equal([
      ['0.8 s', 's', 1],
      ['977-1,158 MiB', 'MiB', 1],
      ['81%', '%', 1],
      ['0.94x', 'x', 1],
      ['290.2 MiB', 'MiB', 6],
      ['0.4 s', 's', 6],
      ['77%', '%', 6],
    ]);
  });

  it('takes a figure as sourced when the source has each number, in its unit, to the precision written', function () {
    const source = figureSource(['| binder | peak RSS MiB | first s |', '| --- | --- | --- |', '| Topovol | 976.7 | 0.84 |', '| Topovol | 1158.3 | 4.0 |'].join('\n'));
    const one = (text: string): boolean => isSourced(figuresIn(text)[0]!, source);
    expect(one('peaked at 977-1,158 MiB')).to.equal(true);
    expect(one('first binding 0.8 s')).to.equal(true);
    expect(one('first binding 4 s')).to.equal(true);
    expect(one('peaked at 977 MB'), 'another unit').to.equal(false);
    expect(one('peaked at 976.8 MiB'), 'another number').to.equal(false);
    expect(one('first binding 0.9 s')).to.equal(false);
  });

  it('every figure of speed or memory in README.md and docs/ is in docs/benchmarks.md or the bench notes (hack/bench/README.md)', function () {
    const source = figureSource(read('docs/benchmarks.md'), read('hack/bench/README.md'));
    const unsourced: string[] = [];
    const listedButGone: string[] = [];
    for (const file of docFiles()) {
      const text = file === 'docs/reliability.md' ? chaosBlock(read(file)).rest : read(file);
      const allowed = NOT_BENCHMARK_FIGURES[file] ?? {};
      // Every figure the file has, sourced or not: whether a listed one is stale must not depend on
      // what the committed record happens to contain.
      const present = new Set<string>();
      for (const fig of figuresIn(text)) {
        present.add(fig.text);
        if (allowed[fig.text] !== undefined || isSourced(fig, source)) continue;
        unsourced.push(`${file}:${fig.line}: "${fig.text}"`);
      }
      for (const listed of Object.keys(allowed)) if (!present.has(listed)) listedButGone.push(`${file}: "${listed}"`);
    }
    expect(unsourced, 'figures docs/benchmarks.md does not have (cite them from there, or list them as not benchmark figures)').to.deep.equal([]);
    expect(listedButGone, 'listed as not benchmark figures, but no longer in the file: drop them from the list').to.deep.equal([]);
  });

  it("docs/reliability.md's chaos results are a committed run's results file (hack/chaos-results/)", function () {
    const { block } = chaosBlock(read('docs/reliability.md'));
    const runs = readdirSync(path.join(repoRoot(), 'hack', 'chaos-results')).filter((f) => f.endsWith('.md'));
    const same = runs.filter((f) => read(`hack/chaos-results/${f}`).trim() === block.trim());
    expect(same, `the block "${block.trim().split('\n')[0]}" is one of ${runs.join(', ')}`).to.have.length.greaterThan(0);
  });
});
