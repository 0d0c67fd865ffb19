#!/usr/bin/env bash
# The end-to-end suite alone (packages/e2e, also the last step of hack/test.sh): the delayed-binding
# test plan of KEP-490 and Topovol's scenarios on the real storage stack. Extra arguments go to
# mocha, e.g. `hack/e2e.sh --grep rollback`; TOPOVOL_E2E_LOOPS_OFF=rollback leaves a loop out.
source "$(dirname "$0")/lib/bootstrap.sh"
bootstrap
echo "==> control-plane and CSI binaries" >&2
bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager >&2
bash hack/csi-binaries.sh csi-provisioner csi-provisioner-rbac.yaml >&2
echo "==> end-to-end suite" >&2
pnpm run --silent test:e2e "$@"
