import { expect } from 'chai';
import { managerWorkload } from '../../src/index.js';

// A mutation run of the well-known names found no unit test of the node label the manager's
// Deployments spread their replicas by: a wrong key spreads by nothing, and the standby may share
// the leader's node.

interface SpreadConstraint {
  maxSkew: number;
  topologyKey: string;
  whenUnsatisfiable: string;
  labelSelector: { matchLabels: Record<string, string> };
}
interface Spread {
  spec: { selector: { matchLabels: Record<string, string> }; template: { spec: { topologySpreadConstraints?: SpreadConstraint[] } } };
}

describe('manager workload spread edges', function () {
  it('a Deployment spreads its replicas over nodes by kubernetes.io/hostname (k8s.io/api/core/v1 well_known_labels.go), selecting its own pods', function () {
    const d = managerWorkload({ kind: 'Deployment', name: 'topovol-pv-binder', component: 'pv-binder', serviceAccountName: 'sa', controllers: 'pv-binder', leaderElect: true }) as unknown as Spread;
    expect(d.spec.template.spec.topologySpreadConstraints).to.deep.equal([
      { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'ScheduleAnyway', labelSelector: { matchLabels: d.spec.selector.matchLabels } },
    ]);
  });

  it('a DaemonSet (one pod per node) has no spread constraint', function () {
    const ds = managerWorkload({ kind: 'DaemonSet', name: 'topovol-capacity', component: 'capacity', serviceAccountName: 'sa', controllers: 'capacity', leaderElect: false }) as unknown as Spread;
    expect(ds.spec.template.spec.topologySpreadConstraints).to.equal(undefined);
  });
});
