#!/usr/bin/env bash
# Builds what a Millwright VM boots into bin/vm/ (see
# docs/providers/node-agent.md):
#   vmlinuz        Debian's cloud kernel, from its package (apt-get download,
#                  unpacked with dpkg-deb into a cache; nothing installed)
#   initramfs.img  /init = millwright-node-agent (static) + the kernel
#                  modules it needs, built by cmd/millwright-initramfs
# Stamped like the other tools: a second run with nothing changed does no
# work beyond Go's cached build of the agent.
# Usage: [BIN_DIR=dir] hack/tools/vm.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${BIN_DIR:-$root/bin}"
out="$bin/vm"
mkdir -p "$out"

# The kernel: pinned package and version (bump both together).
kernel_pkg="linux-image-6.1.0-56-cloud-amd64"
kernel_version="6.1.192-2"
kernel_release="${kernel_pkg#linux-image-}"

cache="${XDG_CACHE_HOME:-$HOME/.cache}/millwright/vm/$kernel_pkg-$kernel_version"
if [[ ! -f "$cache/.unpacked" ]]; then
  if ! command -v apt-get >/dev/null || ! command -v dpkg-deb >/dev/null; then
    echo "vm.sh: apt-get and dpkg-deb are needed to fetch $kernel_pkg; skipping bin/vm (the VM provider needs it)" >&2
    exit 0
  fi
  echo "fetching $kernel_pkg=$kernel_version"
  rm -rf "$cache" && mkdir -p "$cache"
  (cd "$cache" && apt-get download -q "$kernel_pkg=$kernel_version" 2>&1 | grep -v "couldn't be accessed by user '_apt'" || true)
  deb=("$cache"/*.deb)
  [[ -f "${deb[0]}" ]] || { echo "vm.sh: apt-get download $kernel_pkg=$kernel_version failed (run apt-get update?)" >&2; exit 1; }
  dpkg-deb -x "${deb[0]}" "$cache/root"
  rm -f "${deb[@]}"
  touch "$cache/.unpacked"
fi

kernel_want="$kernel_pkg=$kernel_version"
if [[ ! -f "$out/vmlinuz" || "$(cat "$out/.vmlinuz.stamp" 2>/dev/null)" != "$kernel_want" ]]; then
  cp "$cache/root/boot/vmlinuz-$kernel_release" "$out/vmlinuz"
  chmod 0644 "$out/vmlinuz"
  echo "$kernel_want" >"$out/.vmlinuz.stamp"
  echo "built bin/vm/vmlinuz ($kernel_want)"
fi

# The agent, static (no libc in the initramfs). Go's build cache makes this
# cheap when nothing changed; the initramfs is rebuilt only when the
# agent's binary or the kernel differ from the stamp's.
agent="$cache/millwright-node-agent"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$agent" ./cmd/millwright-node-agent)
initramfs_want="$kernel_want agent-sha256=$(sha256sum "$agent" | cut -d' ' -f1)"
if [[ ! -f "$out/initramfs.img" || "$(cat "$out/.initramfs.stamp" 2>/dev/null)" != "$initramfs_want" ]]; then
  start=$SECONDS
  (cd "$root" && go run ./cmd/millwright-initramfs --init "$agent" \
    --modules-root "$cache/root/lib/modules/$kernel_release" --out "$out/initramfs.img")
  echo "$initramfs_want" >"$out/.initramfs.stamp"
  echo "built bin/vm/initramfs.img in $((SECONDS - start))s"
fi
