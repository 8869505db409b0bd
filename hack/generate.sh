#!/usr/bin/env bash
# Regenerates everything derived from sources: deepcopy code, CRDs and RBAC
# roles from the Go markers (and the Helm chart's copies of them), the
# driver plugin protocol's Go code from its .proto, the metrics reference
# (docs/metrics.md) and the Grafana dashboard (config/grafana/).
# With OUT_DIR, writes the results there instead of into the tree, so a test
# can compare them with what is committed and fail when the tree is stale.
# Usage: hack/generate.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bin="${BIN_DIR:-$root/bin}"
gen="$bin/controller-gen"
out="${1:-}"

object_out="" crd_out="output:crd:artifacts:config=config/crd/bases"
rbac_out="output:rbac:artifacts:config=config/rbac"
proto_out="api/driver"
if [[ -n "$out" ]]; then
  mkdir -p "$out/object" "$out/crd" "$out/rbac" "$out/proto"
  object_out="output:object:dir=$out/object"
  crd_out="output:crd:dir=$out/crd"
  rbac_out="output:rbac:dir=$out/rbac"
  proto_out="$out/proto"
fi

# One object run per API package: with OUT_DIR, each package's
# zz_generated.deepcopy.go needs a directory of its own.
"$gen" object paths=./api/v1alpha1/... $object_out
"$gen" object paths=./api/infrastructure/... ${out:+output:object:dir=$out/object-infrastructure}
"$gen" object paths=./api/bootstrap/... ${out:+output:object:dir=$out/object-bootstrap}
"$gen" crd paths=./api/... $crd_out
# Bounds controller-gen has no marker for (label values inside label maps).
crd_dir="config/crd/bases"
[[ -n "$out" ]] && crd_dir="$out/crd"
go run ./hack/crdlimits "$crd_dir"
# The roles from the +kubebuilder:rbac markers of the controllers, the
# manager and the sim, into config/rbac/role.yaml: the ClusterRole
# millwright-manager, the ClusterRole millwright-sim, and the Roles in
# kube-system (bootstrap tokens) and millwright-system (leader election).
"$gen" rbac:roleName=millwright-manager paths=./internal/... $rbac_out
# The Helm chart's CRDs and roles, from the files just generated: one
# source for the kustomize bases and the chart.
chart_out="charts/millwright" rbac_file="config/rbac/role.yaml"
if [[ -n "$out" ]]; then chart_out="$out/chart" rbac_file="$out/rbac/role.yaml"; fi
go run ./hack/chartgen -crds "$crd_dir" -rbac "$rbac_file" -chart "$chart_out"

# buf runs the plugins it finds on PATH: put the pinned ones from bin/ first
# so an installed protoc-gen-go of another version is never used.
PATH="$bin:$PATH" "$bin/buf" lint api/driver
PATH="$bin:$PATH" "$bin/buf" generate api/driver --template api/driver/buf.gen.yaml --output "$proto_out"

# The flags reference, written from the binaries' own --help, so the docs
# say exactly what the programs accept.
flags_out="docs/flags"
[[ -n "$out" ]] && flags_out="$out/flags"
mkdir -p "$flags_out"
for cmd in millwright-manager millwright-sim millwright-libvirt millwright-aws; do
  go run "./cmd/$cmd" --help >"$flags_out/$cmd.txt"
done

# The metrics reference, from the collectors the manager registers, and
# the Grafana dashboard, from hack/dashboardgen's panels.
grafana_out="config/grafana" metrics_out="docs"
if [[ -n "$out" ]]; then grafana_out="$out/grafana" metrics_out="$out/metrics"; fi
mkdir -p "$grafana_out" "$metrics_out"
go run ./hack/metricsdoc -out "$metrics_out/metrics.md"
go run ./hack/dashboardgen -out "$grafana_out/millwright.json"
# The chart's copy, which its ConfigMap (metrics.grafanaDashboard) holds.
mkdir -p "$chart_out/dashboards"
cp "$grafana_out/millwright.json" "$chart_out/dashboards/millwright.json"

# The Machine phase diagram, drawn from the machine controller's own
# transition table (machine.PhaseTransitions).
images_out="docs/images"
[[ -n "$out" ]] && images_out="$out/images"
go run ./hack/phasediagram -o "$images_out/machine-phases.svg"

# The rollout timeline, drawn from the committed data of a bench run
# (docs/images/rollout-timeline.csv; docs/rollout.md says how to record
# it again).
go run ./hack/rolloutplot -in docs/images/rollout-timeline.csv -o "$images_out/rollout-timeline.svg"
