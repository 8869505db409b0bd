#!/usr/bin/env bash
# Regenerates everything derived from Go markers: deepcopy code and CRDs.
# With OUT_DIR, writes the results there instead of into the tree, so a test
# can compare them with what is committed and fail when the tree is stale.
# Usage: hack/generate.sh [OUT_DIR]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
gen="${BIN_DIR:-$root/bin}/controller-gen"
out="${1:-}"

object_out="" crd_out="output:crd:artifacts:config=config/crd/bases"
if [[ -n "$out" ]]; then
  mkdir -p "$out/object" "$out/crd"
  object_out="output:object:dir=$out/object"
  crd_out="output:crd:dir=$out/crd"
fi

"$gen" object paths=./api/... $object_out
"$gen" crd paths=./api/... $crd_out
