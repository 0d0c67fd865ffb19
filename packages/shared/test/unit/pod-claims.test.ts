import { expect } from 'chai';
import { projectPod } from '../../src/informer/projections.js';
import type { Pod } from '../../src/types/wire.js';
import { claimKeysOfPod, claimNamesOfPod, isPodTerminated } from '../../src/volumes/pod-claims.js';

const pod = (extra: Partial<Pod> = {}): Pod => ({
  metadata: { name: 'web-0', namespace: 'ns' },
  spec: {
    containers: [{ name: 'c' }],
    volumes: [
      { name: 'data', persistentVolumeClaim: { claimName: 'data-web-0' } },
      { name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '1Gi' } } } } } },
      { name: 'config', configMap: { name: 'cm' } },
    ],
  },
  ...extra,
});

describe('the claims a pod uses', function () {
  it('names persistentVolumeClaim volumes and generic ephemeral volumes (<pod>-<volume>), nothing else', function () {
    expect(claimNamesOfPod(pod())).to.deep.equal(['data-web-0', 'web-0-scratch']);
    expect(claimKeysOfPod(pod())).to.deep.equal(['ns/data-web-0', 'ns/web-0-scratch']);
  });

  it('leaves out names no claim can have (kube-apiserver checks only that a claimName is not empty), raw or projected', function () {
    const p = pod({ metadata: { name: 'web-0', namespace: 'ns' } });
    p.spec!.volumes!.push(
      { name: 'huge', persistentVolumeClaim: { claimName: 'x'.repeat(300_000) } },
      { name: 'upper', persistentVolumeClaim: { claimName: 'Data' } },
      { name: 'nl', persistentVolumeClaim: { claimName: 'a\nb' } },
      { name: 'max', persistentVolumeClaim: { claimName: 'm'.repeat(253) } },
    );
    expect(claimNamesOfPod(p)).to.deep.equal(['data-web-0', 'web-0-scratch', 'm'.repeat(253)]);
    expect(claimNamesOfPod(projectPod(p))).to.deep.equal(['data-web-0', 'web-0-scratch', 'm'.repeat(253)]);
    expect(JSON.stringify(projectPod(p)).length, 'the cache keeps none of the long name').to.be.below(2_000);
  });

  it('names each claim once: two volumes with one claimName, or an ephemeral volume whose <pod>-<volume> another volume names', function () {
    const base = pod();
    const p = pod({ spec: { ...base.spec!, volumes: [...base.spec!.volumes!, { name: 'again', persistentVolumeClaim: { claimName: 'data-web-0' } }, { name: 'eph', persistentVolumeClaim: { claimName: 'web-0-scratch' } }] } });
    expect(claimNamesOfPod(p)).to.deep.equal(['data-web-0', 'web-0-scratch']);
    expect(claimKeysOfPod(p)).to.deep.equal(['ns/data-web-0', 'ns/web-0-scratch']);
  });

  it('survives the shared pod projection, which keeps only what names a claim', function () {
    const slim = projectPod(pod());
    expect(claimNamesOfPod(slim)).to.deep.equal(['data-web-0', 'web-0-scratch']);
    expect(slim.spec?.volumes?.map((v) => v.name)).to.deep.equal(['data', 'scratch']);
  });

  it('the projection keeps a pod\'s nodeSelector and required node affinity (what the kubelet checks of a hand-placed pod), only for pods using claims', function () {
    const required = { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] };
    const spec = {
      nodeSelector: { zone: 'a' },
      affinity: {
        nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required, preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 1, preference: required.nodeSelectorTerms[0]! }] },
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ topologyKey: 'zone' }] },
      },
    };
    const withClaims = pod();
    const slim = projectPod(pod({ spec: { ...withClaims.spec!, ...spec } }));
    expect([slim.spec?.nodeSelector, slim.spec?.affinity]).to.deep.equal([{ zone: 'a' }, { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: required } }]);
    const none = projectPod(pod({ spec: { ...withClaims.spec!, ...spec, volumes: [] } }));
    expect([none.spec?.nodeSelector, none.spec?.affinity]).to.deep.equal([undefined, undefined]);
  });

  it('the projection keeps no annotations (read by no loop; up to 256 KiB a pod, sized by whoever writes the pod)', function () {
    const slim = projectPod(pod({ metadata: { name: 'web-0', namespace: 'ns', annotations: { big: 'x'.repeat(200_000) } } }));
    expect(slim.metadata).to.not.have.property('annotations');
    expect(JSON.stringify(slim).length).to.be.below(2048);
  });
});

describe('isPodTerminated (pkg/volume/util IsPodTerminated)', function () {
  const deleting = { name: 'p', namespace: 'ns', deletionTimestamp: '2026-01-01T00:00:00Z' };
  const cases: { name: string; pod: Pod; want: boolean }[] = [
    { name: 'Pending', pod: pod({ status: { phase: 'Pending' } }), want: false },
    { name: 'Running', pod: pod({ status: { phase: 'Running' } }), want: false },
    { name: 'Succeeded', pod: pod({ status: { phase: 'Succeeded' } }), want: true },
    { name: 'Failed', pod: pod({ status: { phase: 'Failed' } }), want: true },
    { name: 'deleted, never ran (no container statuses)', pod: pod({ metadata: deleting, status: { phase: 'Pending' } }), want: true },
    { name: 'deleted, a container still running', pod: pod({ metadata: deleting, status: { phase: 'Running', containerStatuses: [{ name: 'c', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } }] } }), want: false },
    { name: 'deleted, containers terminated', pod: pod({ metadata: deleting, status: { phase: 'Running', containerStatuses: [{ name: 'c', image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: 0 } } }] } }), want: true },
  ];
  for (const c of cases) it(c.name, () => expect(isPodTerminated(c.pod)).to.equal(c.want));
});
