#!/usr/bin/env bash
# Installs what the libvirt driver and its tests run on: QEMU, libvirt's
# daemons (libvirtd, virtlogd), dnsmasq for libvirt's NAT networks and
# qemu-img (qemu-utils), which libvirt calls to make the VMs' qcow2
# overlays. Debian's packages, installed only when missing, so a second run
# does no work. Needs root (as apt-get does) unless all are there already.
# Usage: hack/tools/libvirt.sh
set -euo pipefail

packages=(qemu-system-x86 qemu-utils libvirt-daemon-system dnsmasq-base)

# /dev/kvm as Debian's udev rule makes it (group kvm, 0660) where udev
# does not run. Left root-only, libvirt 9.0 finds KVM usable when it
# probes QEMU (the probe keeps CAP_DAC_OVERRIDE) but unusable when it
# checks the cached probe (as the qemu user), so it probes again at every
# lookup: each domain definition then took over a minute.
kvm_access() {
  [[ -c /dev/kvm ]] && getent group kvm >/dev/null || return 0
  [[ "$(stat -c '%G %a' /dev/kvm)" == "kvm 660" ]] && return 0
  local sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "giving group kvm access to /dev/kvm (mode 0660), as Debian's udev rule does"
  $sudo chgrp kvm /dev/kvm && $sudo chmod 0660 /dev/kvm
}

missing=()
for p in "${packages[@]}"; do
  if ! dpkg -s "$p" >/dev/null 2>&1; then
    missing+=("$p")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  kvm_access
  exit 0
fi

echo "installing ${missing[*]}"
sudo=""
[[ $(id -u) -eq 0 ]] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
kvm_access
