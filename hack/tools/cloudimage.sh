#!/usr/bin/env bash
# Builds a Debian cloud image a libvirt Machine boots from the driver's
# NoCloud seed (docs/providers/libvirt.md, "Booting a cloud image"), in one
# of two flavours that share everything but what joins the VM:
#   agent    (the default; `make cloud-image`) into bin/cloudimage/:
#            millwright-node-agent as a systemd service (--cloud-init mode:
#            it reads what cloud-init wrote)
#   kubelet  (`make kubelet-image`) into bin/kubeletimage/: a kubeadm-style
#            node: the kubelet built from the pinned Kubernetes module
#            (build.sh kubelet), containerd built from its pinned module,
#            Debian's runc and CNI plugins, a node-local bridge network, and
#            a pause and a workload image imported into containerd
#            (docs/providers/node-images.md)
# Each output directory holds:
#   disk.qcow2     the root filesystem (ext4, no partition table, no
#                  bootloader): Debian (the host's release, bookworm) with
#                  systemd, cloud-init, Debian's cloud kernel and the
#                  flavour's programs
#   vmlinuz        the image's kernel and Debian's initramfs for it, booted
#   initrd.img     directly by libvirt with root=/dev/vda
# Runs as root (debootstrap, chroot). Needs no loop device: mkfs.ext4 -d
# fills the filesystem from a directory. The root filesystem is cached
# under ~/.cache/millwright/cloudimage/<pin>; a second run with nothing
# changed does no work, one with a new agent only re-makes the disk. The
# kubelet flavour caches its own root filesystem (a copy of that one with
# its packages) under <pin>/kubelet-<its pin>.
# Not part of `make tools`: `make cloud-image` and `make kubelet-image` run it.
# Usage: [BIN_DIR=dir] hack/tools/cloudimage.sh [agent|kubelet]
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${BIN_DIR:-$root/bin}"
flavor="${1:-agent}"
case "$flavor" in
  agent) out="$bin/cloudimage" ;;
  kubelet) out="$bin/kubeletimage" ;;
  *) echo "usage: cloudimage.sh [agent|kubelet]" >&2; exit 2 ;;
esac

# The pin: the release, the kernel (vm.sh's, bump both together) and the
# root filesystem recipe's revision (bump it when the debootstrap and apt
# steps below change).
suite="bookworm"
mirror="http://deb.debian.org/debian"
security="http://deb.debian.org/debian-security"
kernel_pkg="linux-image-6.1.0-56-cloud-amd64"
kernel_version="6.1.192-2"
kernel_release="${kernel_pkg#linux-image-}"
recipe=1
pin="$suite-$kernel_release-$kernel_version-r$recipe"
disk_size="${CLOUD_IMAGE_SIZE:-2G}"
# The kubelet flavour's pins: containerd (built from its module; the
# kubelet 1.36 warns that a runtime without the CRI RuntimeConfig call,
# such as Debian's containerd 1.6, loses support in 1.37), Debian's runc
# and CNI plugins (runc needs cgo, so Debian's build), the images'
# references and the recipe of its root filesystem (bump it when the apt
# step below changes). The kubelet's version is build.sh's (go.mod's).
containerd_version="v2.4.2"
kubelet_packages="runc=1.1.5+ds1-1+deb12u1 containernetworking-plugins=1.1.1+ds1-3+b5 iptables"
pause_image="localhost/millwright/pause:v1"
hello_image="localhost/millwright/hello:v1"
kubelet_recipe=1

[[ $(id -u) -eq 0 ]] || { echo "cloudimage.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }
# The host's tools, from Debian's packages, installed when missing (as
# libvirt.sh installs QEMU): a fresh machine has none of debootstrap.
declare -A tool_package=([debootstrap]=debootstrap [mkfs.ext4]=e2fsprogs [qemu-img]=qemu-utils)
missing=()
for tool in "${!tool_package[@]}"; do
  command -v "$tool" >/dev/null || missing+=("${tool_package[$tool]}")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "cloudimage.sh: installing ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

cache="${XDG_CACHE_HOME:-$HOME/.cache}/millwright/cloudimage/$pin"
rootfs="$cache/rootfs"
mkdir -p "$cache" "$out"

# chroot_mounts DIR/unmount: what apt and the kernel's postinst need in the
# chroot DIR, always unmounted on exit.
mounted=()
unmount() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
  mounted=()
}
trap unmount EXIT
chroot_mounts() {
  local dir="$1"
  mount -t proc proc "$dir/proc" && mounted+=("$dir/proc")
  mount -t sysfs sys "$dir/sys" && mounted+=("$dir/sys")
  mount --bind /dev "$dir/dev" && mounted+=("$dir/dev")
  mount --bind /dev/pts "$dir/dev/pts" && mounted+=("$dir/dev/pts")
}

if [[ ! -f "$cache/.rootfs" ]]; then
  start=$SECONDS
  rm -rf "$rootfs"
  # debootstrap resolves no virtual packages: python3-cffi-backend is what
  # cloud-init's python3-cryptography needs through one.
  debootstrap --variant=minbase \
    --include=systemd,systemd-sysv,udev,dbus,kmod,initramfs-tools,ifupdown,isc-dhcp-client,iproute2,ca-certificates,python3-cffi-backend,cloud-init \
    "$suite" "$rootfs" "$mirror"
  # The pinned kernel is a security update: install it with apt, from the
  # suite's updates too.
  cat >"$rootfs/etc/apt/sources.list" <<EOF
deb $mirror $suite main
deb $mirror $suite-updates main
deb $security $suite-security main
EOF
  chroot_mounts "$rootfs"
  chroot "$rootfs" apt-get update -q
  DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y -q --no-install-recommends "$kernel_pkg=$kernel_version"
  chroot "$rootfs" apt-get clean
  unmount
  rm -rf "$rootfs"/var/lib/apt/lists/*

  touch "$cache/.rootfs"
  echo "built the root filesystem in $((SECONDS - start))s"
fi

# configure DIR: what both flavours' VMs need: root is the whole of vda;
# the seed is found by cloud-init (NoCloud, label cidata) and nothing else
# is looked for.
configure() {
  local dir="$1"
  echo "/dev/vda / ext4 defaults,errors=remount-ro 0 1" >"$dir/etc/fstab"
  : >"$dir/etc/hostname"
  rm -f "$dir/etc/machine-id" "$dir/var/lib/dbus/machine-id"
  : >"$dir/etc/machine-id"
  cat >"$dir/etc/cloud/cloud.cfg.d/90-millwright.cfg" <<'EOF'
# Millwright's libvirt driver attaches a NoCloud seed (docs/providers/libvirt.md).
datasource_list: [NoCloud, None]
EOF
  # No SSH server and no locales in the image: cloud-init's ssh (host keys)
  # and locale modules would only fail (their settings cannot turn them off
  # within cloud-init's schema).
  sed -i -e '/^ - ssh$/d' -e '/^ - locale$/d' "$dir/etc/cloud/cloud.cfg"
}

# make_disk DIR STAMP: the kernel, the initrd and the disk from DIR, then
# the stamp that says what they were made of.
make_disk() {
  local dir="$1" stamp="$2"
  cp "$dir/boot/vmlinuz-$kernel_release" "$out/vmlinuz"
  cp "$dir/boot/initrd.img-$kernel_release" "$out/initrd.img"
  chmod 0644 "$out/vmlinuz" "$out/initrd.img"
  local raw="$cache/disk-$flavor.raw"
  rm -f "$raw"
  truncate -s "$disk_size" "$raw"
  mkfs.ext4 -q -F -L millwright-root -d "$dir" "$raw"
  rm -f "$out/disk.qcow2"
  qemu-img convert -f raw -O qcow2 "$raw" "$out/disk.qcow2"
  rm -f "$raw"
  echo "$stamp" >"$out/.stamp"
  echo "built ${out#"$root"/}/disk.qcow2 ($(du -h "$out/disk.qcow2" | cut -f1) on disk, $disk_size virtual) in $((SECONDS - start))s"
}

script_sha="$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1)"

if [[ "$flavor" == agent ]]; then
  # The agent (static, like the initramfs's); Go's cache makes this cheap.
  agent="$cache/millwright-node-agent"
  (cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$agent" ./cmd/millwright-node-agent)
  # The configuration is written at every assembly: the script's hash is in
  # the stamp, so changing it re-makes the disk without a new debootstrap.
  want="$pin agent-sha256=$(sha256sum "$agent" | cut -d' ' -f1) script-sha256=$script_sha size=$disk_size"
  if [[ -f "$out/disk.qcow2" && "$(cat "$out/.stamp" 2>/dev/null)" == "$want" ]]; then
    exit 0
  fi
  start=$SECONDS
  configure "$rootfs"
  cat >"$rootfs/etc/systemd/system/millwright-node-agent.service" <<'EOF'
# Joins the VM as a Node from what cloud-init wrote out of the user data
# (docs/providers/node-agent.md, "In a cloud image").
[Unit]
Description=Millwright node agent
After=cloud-init.service network-online.target
Wants=network-online.target
ConditionPathExists=/etc/kubernetes/bootstrap-kubelet.conf

[Service]
ExecStart=/usr/local/bin/millwright-node-agent --cloud-init
Restart=on-failure
RestartSec=5
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
  chroot "$rootfs" systemctl enable millwright-node-agent.service
  install -m 0755 "$agent" "$rootfs/usr/local/bin/millwright-node-agent"
  make_disk "$rootfs" "$want"
  exit 0
fi

# The kubelet flavour. Its root filesystem: the base one (without the
# agent an agent assembly installed there) with Debian's runc, CNI
# plugins and iptables (the bridge plugin's masquerade), cached.
kpin="containerd-$containerd_version-r$kubelet_recipe"
kcache="$cache/kubelet-$kpin"
krootfs="$kcache/rootfs"
mkdir -p "$kcache"
if [[ ! -f "$kcache/.rootfs" ]]; then
  start=$SECONDS
  rm -rf "$krootfs"
  cp -a "$rootfs" "$krootfs"
  rm -f "$krootfs/etc/systemd/system/millwright-node-agent.service" \
    "$krootfs/etc/systemd/system/multi-user.target.wants/millwright-node-agent.service" \
    "$krootfs/usr/local/bin/millwright-node-agent"
  chroot_mounts "$krootfs"
  chroot "$krootfs" apt-get update -q
  # shellcheck disable=SC2086 # the list is words
  DEBIAN_FRONTEND=noninteractive chroot "$krootfs" apt-get install -y -q --no-install-recommends $kubelet_packages
  chroot "$krootfs" apt-get clean
  unmount
  rm -rf "$krootfs"/var/lib/apt/lists/*
  touch "$kcache/.rootfs"
  echo "built the kubelet root filesystem in $((SECONDS - start))s"
fi

# containerd, its runc shim and ctr: static, from the pinned module.
cbin="$kcache/bin"
if [[ ! -x "$cbin/containerd" || ! -x "$cbin/containerd-shim-runc-v2" || ! -x "$cbin/ctr" ]]; then
  start=$SECONDS
  echo "building containerd $containerd_version"
  mkdir -p "$cbin"
  cmod="github.com/containerd/containerd/v2"
  GOBIN="$cbin" CGO_ENABLED=0 go install -trimpath \
    -ldflags "-s -w -X $cmod/version.Version=$containerd_version -X $cmod/version.Revision=module" \
    "$cmod/cmd/containerd@$containerd_version" "$cmod/cmd/containerd-shim-runc-v2@$containerd_version" "$cmod/cmd/ctr@$containerd_version"
  echo "built containerd in $((SECONDS - start))s"
fi
# The kubelet, stamped with its version like the control plane's.
BIN_DIR="$bin" bash "$here/build.sh" kubelet
kubelet="$bin/kubelet"
# The pause and workload images (docker-archive, for ctr import).
images="$kcache/images.tar"
(cd "$root" && go run ./hack/kubeletimage -out "$images" -pause "$pause_image" -hello "$hello_image" >/dev/null)

sha() { sha256sum "$1" | cut -d' ' -f1; }
want="$pin kubelet-$kpin kubelet-sha256=$(sha "$kubelet") containerd-sha256=$(sha "$cbin/containerd") images-sha256=$(sha "$images") script-sha256=$script_sha size=$disk_size"
if [[ -f "$out/disk.qcow2" && "$(cat "$out/.stamp" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi
start=$SECONDS
configure "$krootfs"
install -m 0755 "$kubelet" "$krootfs/usr/bin/kubelet"
install -m 0755 "$cbin/containerd" "$cbin/containerd-shim-runc-v2" "$cbin/ctr" "$krootfs/usr/local/bin/"
# The kubelet's unit as a kubeadm-style package ships it: installed, not
# enabled. The user data's drop-in gives it its flags and
# `systemctl enable --now kubelet` starts it (docs/providers/node-images.md).
cat >"$krootfs/lib/systemd/system/kubelet.service" <<'EOF'
[Unit]
Description=kubelet: the Kubernetes node agent
Documentation=https://kubernetes.io/docs/reference/command-line-tools-reference/kubelet/
Wants=network-online.target containerd.service
After=network-online.target containerd.service

[Service]
ExecStart=/usr/bin/kubelet
Restart=always
RestartSec=5
StandardOutput=journal+console
StandardError=journal+console

[Install]
WantedBy=multi-user.target
EOF
mkdir -p "$krootfs/etc/systemd/system/kubelet.service.d" "$krootfs/var/lib/kubelet" "$krootfs/etc/kubernetes/manifests"
cat >"$krootfs/lib/systemd/system/containerd.service" <<'EOF'
[Unit]
Description=containerd container runtime
Documentation=https://containerd.io
After=network.target local-fs.target

[Service]
ExecStartPre=-/sbin/modprobe overlay
ExecStart=/usr/local/bin/containerd
Type=notify
Delegate=yes
KillMode=process
Restart=always
RestartSec=5
LimitNPROC=infinity
LimitCORE=infinity
TasksMax=infinity
OOMScoreAdjust=-999

[Install]
WantedBy=multi-user.target
EOF
chroot "$krootfs" systemctl enable containerd.service
# containerd: the systemd cgroup driver (the kubelet asks containerd for
# it through the CRI RuntimeConfig call), Debian's CNI plugins, and the
# local pause image as the sandbox image: no registry is reachable.
mkdir -p "$krootfs/etc/containerd" "$krootfs/etc/cni/net.d"
cat >"$krootfs/etc/containerd/config.toml" <<EOF
version = 3

[plugins.'io.containerd.cri.v1.images'.pinned_images]
  sandbox = '$pause_image'

[plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
  SystemdCgroup = true

[plugins.'io.containerd.cri.v1.runtime'.cni]
  bin_dirs = ['/usr/lib/cni']
  conf_dir = '/etc/cni/net.d'
EOF
# The pod network: node-local, a bridge with host-local addresses; every
# node uses the same range (nothing routes between the VMs' pods).
cat >"$krootfs/etc/cni/net.d/10-millwright.conflist" <<'EOF'
{
  "cniVersion": "1.0.0",
  "name": "millwright",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "cni0",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": "10.88.0.0/16"}]],
        "routes": [{"dst": "0.0.0.0/0"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}}
  ]
}
EOF
cat >"$krootfs/etc/modules-load.d/kubernetes.conf" <<'EOF'
overlay
br_netfilter
EOF
cat >"$krootfs/etc/sysctl.d/90-kubernetes.conf" <<'EOF'
net.ipv4.ip_forward = 1
net.bridge.bridge-nf-call-iptables = 1
EOF
[[ -e "$krootfs/etc/resolv.conf" ]] || : >"$krootfs/etc/resolv.conf"

# The images go into the image's containerd store now (namespace k8s.io,
# the CRI's), unpacked: the containerd just built runs here against the
# image's /var/lib/containerd, its CRI plugin off, and ctr imports.
rm -rf "$krootfs/var/lib/containerd"
import="$(mktemp -d)"
cat >"$import/config.toml" <<EOF
version = 3
root = '$krootfs/var/lib/containerd'
state = '$import/state'
disabled_plugins = ['io.containerd.grpc.v1.cri']
[grpc]
  address = '$import/containerd.sock'
EOF
"$cbin/containerd" --config "$import/config.toml" >"$import/containerd.log" 2>&1 &
containerd_pid=$!
stop_import() {
  kill "$containerd_pid" 2>/dev/null && wait "$containerd_pid" 2>/dev/null
  rm -rf "$import"
}
ctr=("$cbin/ctr" --address "$import/containerd.sock" --namespace k8s.io)
for _ in $(seq 50); do "${ctr[@]}" version >/dev/null 2>&1 && break; sleep 0.2; done
if ! "${ctr[@]}" images import "$images" || ! "${ctr[@]}" images label "$pause_image" io.cri-containerd.pinned=pinned >/dev/null; then
  cat "$import/containerd.log" >&2
  stop_import
  exit 1
fi
"${ctr[@]}" images ls
stop_import
make_disk "$krootfs" "$want"
