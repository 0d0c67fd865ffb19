#!/usr/bin/env bash
# Runs every test: type check + build, lint, unit tests, integration tests against a real
# kube-apiserver and etcd (built from the Go module proxy on first use and cached outside the repo,
# or taken from $KUBEBUILDER_ASSETS). This is the README's test command and what .ci/run calls.
source "$(dirname "$0")/lib/bootstrap.sh"
# The pinned release, whatever a shell left behind (hack/skew.sh sets another).
unset TOPOVOL_K8S_VERSION
bootstrap
echo "==> lint" >&2
pnpm run --silent lint
echo "==> Dockerfile build stage (without Docker)" >&2
bash hack/docker-build-stage.sh
echo "==> prometheus and promtool (Debian's package)" >&2
bash hack/lib/ensure-prometheus.sh
echo "==> control-plane binaries" >&2
bash hack/control-plane-binaries.sh etcd kube-apiserver kube-scheduler kube-controller-manager kubectl >&2
bash hack/csi-binaries.sh csi-provisioner csi-provisioner-rbac.yaml >&2
bash hack/helm-binary.sh >&2
# After the binaries: dist/install.yaml is kubectl kustomize's output, with the pinned kubectl.
echo "==> generated files (config/rbac, config/flowcontrol, config/manager, docs/reference, charts/topovol, dist/install.yaml)" >&2
node hack/generate.mjs --check
echo "==> unit tests" >&2
pnpm run --silent test:unit
echo "==> integration tests" >&2
pnpm run --silent test:integration
echo "==> end-to-end suite (packages/e2e; alone: hack/e2e.sh)" >&2
pnpm run --silent test:e2e
