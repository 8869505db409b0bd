#!/usr/bin/env bash
# Installs what the libvirt driver and its tests run on: QEMU, libvirt's
# daemons (libvirtd, virtlogd), dnsmasq for libvirt's NAT networks and
# qemu-img (qemu-utils), which libvirt calls to make the VMs' qcow2
# overlays. Debian's packages, installed only when missing, so a second run
# does no work. Needs root (as apt-get does) unless all are there already.
# Usage: hack/tools/libvirt.sh
set -euo pipefail

packages=(qemu-system-x86 qemu-utils libvirt-daemon-system dnsmasq-base)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

echo "installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
