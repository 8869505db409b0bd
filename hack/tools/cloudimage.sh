#!/usr/bin/env bash
# Builds a Debian cloud image a libvirt Machine boots from the driver's
# NoCloud seed (docs/providers/libvirt.md, "Booting a cloud image"), into
# bin/cloudimage/:
#   disk.qcow2     the root filesystem (ext4, no partition table, no
#                  bootloader): Debian (the host's release, bookworm) with
#                  systemd, cloud-init, Debian's cloud kernel, and
#                  millwright-node-agent as a systemd service
#                  (--cloud-init mode: it reads what cloud-init wrote)
#   vmlinuz        the image's kernel and Debian's initramfs for it, booted
#   initrd.img     directly by libvirt with root=/dev/vda
# Runs as root (debootstrap, chroot). Needs no loop device: mkfs.ext4 -d
# fills the filesystem from a directory. The root filesystem is cached
# under ~/.cache/millwright/cloudimage/<pin>; a second run with nothing
# changed does no work, one with a new agent only re-makes the disk.
# Not part of `make tools`: `make cloud-image` runs it.
# Usage: [BIN_DIR=dir] hack/tools/cloudimage.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${BIN_DIR:-$root/bin}"
out="$bin/cloudimage"

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

[[ $(id -u) -eq 0 ]] || { echo "cloudimage.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }
for tool in debootstrap mkfs.ext4 qemu-img; do
  command -v "$tool" >/dev/null || { echo "cloudimage.sh: $tool is needed (apt-get install debootstrap e2fsprogs qemu-utils)" >&2; exit 1; }
done

cache="${XDG_CACHE_HOME:-$HOME/.cache}/millwright/cloudimage/$pin"
rootfs="$cache/rootfs"
mkdir -p "$cache" "$out"

# chroot_mounts/unmount: what apt and the kernel's postinst need in the
# chroot, always unmounted on exit.
mounted=()
unmount() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" || true; done
  mounted=()
}
trap unmount EXIT
chroot_mounts() {
  mount -t proc proc "$rootfs/proc" && mounted+=("$rootfs/proc")
  mount -t sysfs sys "$rootfs/sys" && mounted+=("$rootfs/sys")
  mount --bind /dev "$rootfs/dev" && mounted+=("$rootfs/dev")
  mount --bind /dev/pts "$rootfs/dev/pts" && mounted+=("$rootfs/dev/pts")
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
  chroot_mounts
  chroot "$rootfs" apt-get update -q
  DEBIAN_FRONTEND=noninteractive chroot "$rootfs" apt-get install -y -q --no-install-recommends "$kernel_pkg=$kernel_version"
  chroot "$rootfs" apt-get clean
  unmount
  rm -rf "$rootfs"/var/lib/apt/lists/*

  touch "$cache/.rootfs"
  echo "built the root filesystem in $((SECONDS - start))s"
fi

# The agent (static, like the initramfs's); Go's cache makes this cheap.
agent="$cache/millwright-node-agent"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$agent" ./cmd/millwright-node-agent)
# The configuration is written at every assembly: the script's hash is in
# the stamp, so changing it re-makes the disk without a new debootstrap.
want="$pin agent-sha256=$(sha256sum "$agent" | cut -d' ' -f1) script-sha256=$(sha256sum "${BASH_SOURCE[0]}" | cut -d' ' -f1) size=$disk_size"
if [[ -f "$out/disk.qcow2" && "$(cat "$out/.stamp" 2>/dev/null)" == "$want" ]]; then
  exit 0
fi
start=$SECONDS
# The VM: root is the whole of vda; the seed is found by cloud-init
# (NoCloud, label cidata) and nothing else is looked for.
echo "/dev/vda / ext4 defaults,errors=remount-ro 0 1" >"$rootfs/etc/fstab"
: >"$rootfs/etc/hostname"
rm -f "$rootfs/etc/machine-id" "$rootfs/var/lib/dbus/machine-id"
: >"$rootfs/etc/machine-id"
cat >"$rootfs/etc/cloud/cloud.cfg.d/90-millwright.cfg" <<'EOF'
# Millwright's libvirt driver attaches a NoCloud seed (docs/providers/libvirt.md).
datasource_list: [NoCloud, None]
EOF
# No SSH server and no locales in the image: cloud-init's ssh (host keys)
# and locale modules would only fail (their settings cannot turn them off
# within cloud-init's schema).
sed -i -e '/^ - ssh$/d' -e '/^ - locale$/d' "$rootfs/etc/cloud/cloud.cfg"
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
cp "$rootfs/boot/vmlinuz-$kernel_release" "$out/vmlinuz"
cp "$rootfs/boot/initrd.img-$kernel_release" "$out/initrd.img"
chmod 0644 "$out/vmlinuz" "$out/initrd.img"
raw="$cache/disk.raw"
rm -f "$raw"
truncate -s "$disk_size" "$raw"
mkfs.ext4 -q -F -L millwright-root -d "$rootfs" "$raw"
rm -f "$out/disk.qcow2"
qemu-img convert -f raw -O qcow2 "$raw" "$out/disk.qcow2"
rm -f "$raw"
echo "$want" >"$out/.stamp"
echo "built bin/cloudimage/disk.qcow2 ($(du -h "$out/disk.qcow2" | cut -f1) on disk, $disk_size virtual) in $((SECONDS - start))s"
