#!/usr/bin/env bash
# Builds the pinned external binaries into bin/ (git-ignored).
#
# Every binary is stamped with its real version, and a stamp file records
# what was built, so a second run with nothing changed does no work.
# Usage: [BIN_DIR=dir] hack/tools/build.sh [TOOL ...]   (no TOOL: all of them)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
bin="${BIN_DIR:-$here/../../bin}"
mkdir -p "$bin"
bin="$(cd "$bin" && pwd)"
cd "$here"

# Versions come from go.mod, so go.mod is the only place to bump a pin.
# The protobuf generators live in proto/, a module of their own (see its
# go.mod for why); protover reads their pins from there.
modver() { go list -m -f '{{.Version}}' "$1"; }
protover() { (cd proto && modver "$1"); }
promver() { (cd prometheus && modver "$1"); }
kube_version="$(modver k8s.io/kubernetes)"
kwok_version="$(modver sigs.k8s.io/kwok)"
etcd_version="$(modver go.etcd.io/etcd/server/v3)"

kube_minor="$(echo "$kube_version" | cut -d. -f2)"
build_date="2026-01-01T00:00:00Z" # fixed, so rebuilds are reproducible
kube_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  kube_ldflags+=" -X $pkg.gitVersion=$kube_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$kube_minor"
  kube_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

wanted=("$@")

# build NAME PACKAGE VERSION [LDFLAGS]: builds PACKAGE into bin/NAME unless
# bin/NAME was already built from VERSION with the same flags. MODULE (the
# directory of the go.mod to build in) defaults to this one.
build() {
  local name="$1" pkg="$2" version="$3" ldflags="${4:-}" dir="${MODULE:-$here}"
  if [[ ${#wanted[@]} -gt 0 && " ${wanted[*]} " != *" $name "* ]]; then
    return 0
  fi
  local stamp="$bin/.$name.stamp" want="$pkg@$version $ldflags"
  if [[ -x "$bin/$name" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    return 0
  fi
  echo "building $name $version"
  local start=$SECONDS
  (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$bin/$name" "$pkg")
  echo "$want" >"$stamp"
  echo "built $name in $((SECONDS - start))s"
}

build controller-gen sigs.k8s.io/controller-tools/cmd/controller-gen "$(modver sigs.k8s.io/controller-tools)"
build staticcheck honnef.co/go/tools/cmd/staticcheck "$(modver honnef.co/go/tools)"
build etcd go.etcd.io/etcd/server/v3 "$etcd_version"
build kwok sigs.k8s.io/kwok/cmd/kwok "$kwok_version" "-X sigs.k8s.io/kwok/pkg/consts.Version=${kwok_version#v}"
build kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver "$kube_version" "$kube_ldflags"
build kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager "$kube_version" "$kube_ldflags"
build kube-scheduler k8s.io/kubernetes/cmd/kube-scheduler "$kube_version" "$kube_ldflags"
build kubectl k8s.io/kubernetes/cmd/kubectl "$kube_version" "$kube_ldflags"
# The kubelet of the kubelet node image (`make kubelet-image`,
# cloudimage.sh kubelet): built only when named, so that `make tools` and
# CI never compile it.
if [[ " ${wanted[*]} " == *" kubelet "* ]]; then
  build kubelet k8s.io/kubernetes/cmd/kubelet "$kube_version" "$kube_ldflags"
fi
MODULE="$here/proto" build buf github.com/bufbuild/buf/cmd/buf "$(protover github.com/bufbuild/buf)"
MODULE="$here/proto" build protoc-gen-go google.golang.org/protobuf/cmd/protoc-gen-go "$(protover google.golang.org/protobuf)"
MODULE="$here/proto" build protoc-gen-go-grpc google.golang.org/grpc/cmd/protoc-gen-go-grpc "$(protover google.golang.org/grpc/cmd/protoc-gen-go-grpc)"
# The Prometheus server the dashboard test scrapes the manager with; its
# module is tagged v0.3XX.Y for Prometheus 3.XX.Y, the version it reports.
# Built without the web UI's assets (the builtinassets tag): the test uses
# only the HTTP API.
prom_version="$(promver github.com/prometheus/prometheus)"
prom_release="3.$(echo "$prom_version" | cut -d. -f2 | sed 's/^3//').$(echo "$prom_version" | cut -d. -f3)"
MODULE="$here/prometheus" build prometheus github.com/prometheus/prometheus/cmd/prometheus "$prom_version" \
  "-X github.com/prometheus/common/version.Version=$prom_release -X github.com/prometheus/common/version.Branch=HEAD -X github.com/prometheus/common/version.BuildDate=$build_date"

# The kernel and initramfs Millwright VMs boot (bin/vm/), with its own
# stamps: see vm.sh.
if [[ ${#wanted[@]} -eq 0 || " ${wanted[*]} " == *" vm "* ]]; then
  BIN_DIR="$bin" bash "$here/vm.sh"
fi
