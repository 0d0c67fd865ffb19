import type { ScenarioContext } from './diff-scenario.js';
import { claimIs } from './scenario.js';
import type { Scenario } from './scenario.js';

const BETA_ZONE = 'failure-domain.beta.kubernetes.io/zone';
const GA_ZONE = 'topology.kubernetes.io/zone';

/**
 * A legacy volume labelled with a zone, bound to claim c, and one Ready node with these labels;
 * then a pod using c. Upstream schedules it by the scheduler's VolumeZone filter; Topovol also runs
 * zonal-pv-upgrade, which has given the volume node affinity by then: the pod must land all the same.
 */
async function legacyVolumeAndNode(s: ScenarioContext, nodeLabels: Record<string, string>): Promise<void> {
  await s.node('n1', nodeLabels);
  await s.pv('legacy', '1Gi', { labels: { [BETA_ZONE]: 'z1' } });
  await s.pvc('c', '1Gi', { volumeName: s.name('legacy') });
  await s.settle();
  await s.pod('p', ['c']);
}

/**
 * Topovol's zonal-pv-upgrade gives the legacy volume node affinity on purpose (docs/zonal-pv-upgrade.md);
 * kube-controller-manager has no such loop. What it must never change is where the pod can go,
 * which the pods' nodes compare.
 */
const AFFINITY_WRITTEN = ['volumes.legacy.object.spec.nodeAffinity'];

/** KEP-490 "Zonal PV Upgrade": the upgrade may never make a volume unschedulable where it is schedulable today. */
export const zonalScenarios: Scenario[] = [
  {
    name: 'zonal upgrade: a volume with only the beta zone label stays schedulable on a node with only the GA zone label',
    run: (s) => legacyVolumeAndNode(s, { [GA_ZONE]: 'z1' }),
    notCompared: AFFINITY_WRITTEN,
    expect(st) {
      claimIs(st, 'c', { phase: 'Bound' });
      if (st.pods.p?.nodeName !== 'n1') throw new Error(`pod p on ${st.pods.p?.nodeName}, want n1`);
    },
  },
  {
    name: 'zonal upgrade: a volume with a zone label stays schedulable on a node without any zone label',
    run: (s) => legacyVolumeAndNode(s, {}),
    notCompared: AFFINITY_WRITTEN,
    expect(st) {
      if (st.pods.p?.nodeName !== 'n1') throw new Error(`pod p on ${st.pods.p?.nodeName}, want n1`);
    },
  },
];
