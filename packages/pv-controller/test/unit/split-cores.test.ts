import { expect } from 'chai';
import { FlagError } from '@topovol/shared';
import type { KubeClient } from '@topovol/shared';
import { Resources } from '@topovol/shared';
import { parseBenchFlags } from '../../bench/bench-flags.js';
import type { BindingRecord } from '../../bench/bench-report.js';
import type { BindingRun } from '../../bench/binding-run.js';
import { coreSplit, parseCpuList } from '../../bench/core-split.js';
import { splitCoresSection } from '../../bench/split-cores-section.js';
import { measureWriteCeiling } from '../../bench/write-ceiling.js';

// `pv-binder.sh --split-cores`: the API server on cores of its own, and what the doc reads from it.
describe('pv-binder bench with split cores', function () {
  it('gives the API server the first half of the CPUs it may use and the binder and the bench the rest; one CPU cannot be split', function () {
    expect(coreSplit([0, 1])).to.deep.equal({ server: '0', clients: '1', serverCpus: 1 });
    expect(coreSplit([0, 1, 2, 3])).to.deep.equal({ server: '0,1', clients: '2,3', serverCpus: 2 });
    expect(coreSplit([0, 1, 2])).to.deep.equal({ server: '0', clients: '1,2', serverCpus: 1 });
    // A container's cpuset: the ids it has, not 0..n-1.
    expect(coreSplit(parseCpuList('2-3,6,7\n'))).to.deep.equal({ server: '2,3', clients: '6,7', serverCpus: 2 });
    expect(() => coreSplit([4])).to.throw(/at least 2 CPUs/);
    expect(() => parseCpuList('a-b')).to.throw(/not a CPU list/);
  });

  it('is a static-scenario flag, off by default', function () {
    expect(parseBenchFlags([]).splitCores).to.equal(false);
    expect(parseBenchFlags(['--split-cores']).splitCores).to.equal(true);
    expect(() => parseBenchFlags(['--scenario=delayed', '--split-cores'])).to.throw(FlagError, /--split-cores/);
  });

  it("the ceiling reports the server's CPU per write over all its rounds, not only the fastest", async function () {
    let cpu = 10;
    const client = { patch: () => ((cpu += 0.002), Promise.resolve({})) } as unknown as KubeClient;
    const c = await measureWriteCeiling(client, Resources.persistentVolumes, ['a', 'b'], 300, 4, () => cpu);
    expect(c.serverCpuMsPerWrite).to.be.closeTo(2, 1e-9);
    expect((await measureWriteCeiling(client, Resources.persistentVolumes, ['a'], 300, 4)).serverCpuMsPerWrite).to.equal(undefined);
  });

  it("the doc section reads how busy the server's CPU was and what a binding cost it against four ceiling writes", function () {
    const run = (contender: BindingRun['contender'], round: number, pairsPerSecond: number, apiserver: number): BindingRun =>
      ({
        contender,
        order: 'objects-first',
        n: 1000,
        round,
        bound: 1000,
        complete: true,
        firstBoundSeconds: 0.5,
        allBoundSeconds: 1000 / pairsPerSecond,
        pairsPerSecond,
        fractionOfCeiling: pairsPerSecond / 125,
        ceiling: { writesPerSecond: 500, serverCpuMsPerWrite: 1.5 },
        binder: { cpuMsPerBinding: 1.2, peakRssMiB: 100 },
        // CPU seconds over the window: kube-apiserver + etcd = (apiserver + 1) ms per binding.
        cpuSeconds: { binder: 1.2, apiserver, etcd: 1, bench: 0.1 },
        machineBusyFraction: 0.7,
      }) as BindingRun;
    const rec = {
      date: 'd',
      machine: '2 CPUs (x), 1 GiB memory',
      options: { ns: [1000], orders: ['objects-first'], repeat: 3, concurrency: 32 },
      runs: [run('topovol', 1, 100, 7), run('topovol', 2, 110, 8), run('topovol', 3, 90, 9), run('upstream', 1, 40, 12)],
    } as unknown as BindingRecord;
    const text = splitCoresSection(rec);
    expect(text).to.contain('--order objects-first --repeat 3 --split-cores');
    expect(text).to.contain('pinned to CPU 0 and the binder and the bench');
    // Server CPU per binding 8, 9 and 10 ms at 100, 110 and 90 pairs/s: 80%, 99% and 90% of one CPU.
    expect(text).to.contain('| objects-first | Topovol | 1000 | 3 | 100.0 (90.0-110.0) | 500 | 80% (72-88%) | 1.20 | 9.00 (8.00-10.00) | 6.00 | 90% (80-99%) |');
    expect(text).to.contain('- objects-first, N = 1000: 80% of the ceiling, with kube-apiserver and etcd using 90% of their CPU while it bound');
    expect(text).to.contain('| objects-first | kube-controller-manager | 1000 | 1 |');
    expect(text).to.contain("In every round of Topovol's, kube-apiserver and etcd kept their CPU 80-99% busy (in kube-controller-manager's: 52-52%).");
    // Not saturated in every round (80%): no claim that the binder is not what the server waits for.
    expect(text).to.not.contain('is not what the API server waits for');
    expect(text).to.contain('merge patches (32 in flight)');
    expect(text).to.not.contain('own ceiling allows');
    // A round above its ceiling, with 9 ms per binding against 6 ms per four ceiling writes: not explained by CPU per write.
    const over = splitCoresSection({ ...rec, runs: [{ ...rec.runs[1]!, fractionOfCeiling: 1.04 }] });
    expect(over).to.contain('one round bound more than its own ceiling allows, not explained by the server');
    expect(over).to.contain('is not what the API server waits for');
    const cheaper = splitCoresSection({ ...rec, runs: [{ ...rec.runs[1]!, fractionOfCeiling: 1.04, ceiling: { ...rec.runs[1]!.ceiling, serverCpuMsPerWrite: 3 } }] });
    expect(cheaper).to.contain('its bindings costing the server less per write than its ceiling');
    // The split the runs recorded wins over the machine's halves.
    const recorded = splitCoresSection({ ...rec, runs: rec.runs.map((r) => ({ ...r, cores: { server: '2,3', clients: '6,7', serverCpus: 2 } })) });
    expect(recorded).to.contain('pinned to CPUs 2,3 and the binder and the bench');
    expect(splitCoresSection(undefined)).to.equal('');
  });
});
