package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"net/netip"
	"strconv"
)

// shortHash is the first n hex digits of the SHA-256 of s: stable across
// processes and Go versions, unlike map order or hash/maphash.
func shortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func hash64(s string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(s))
	return h.Sum64()
}

// unit is a deterministic "random" number in [0, 1) drawn from the seed
// and the parts. Deriving each draw from what it is for, rather than from
// a shared generator, keeps faults independent of the order in which
// concurrent calls arrive.
func unit(seed int64, parts ...string) float64 {
	h := sha256.New()
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seed))
	_, _ = h.Write(b[:])
	for _, p := range parts {
		_, _ = h.Write([]byte(strconv.Itoa(len(p))))
		_, _ = h.Write([]byte(p))
	}
	sum := h.Sum(nil)
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// The VMs' InternalIPs come from 10.0.0.0/8; host parts .0 and .255 are
// skipped so that every address looks ordinary.
const ipSpace = 1 << 24

// allocateIPLocked derives a VM's InternalIP from its ID and probes past
// taken addresses, so an IP is stable for a VM and unique among live VMs.
func (c *Cloud) allocateIPLocked(id string) (string, bool) {
	off := uint32(hash64(id) % ipSpace)
	for range ipSpace {
		last := off & 0xff
		if _, taken := c.ips[off]; !taken && last != 0 && last != 255 {
			return formatIP(off), true
		}
		off = (off + 1) % ipSpace
	}
	return "", false
}

func formatIP(off uint32) string {
	return fmt.Sprintf("10.%d.%d.%d", off>>16&0xff, off>>8&0xff, off&0xff)
}

// parseIPv4 returns the offset of an address in 10.0.0.0/8.
func parseIPv4(s string) (uint32, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() {
		return 0, false
	}
	b := a.As4()
	if b[0] != 10 {
		return 0, false
	}
	return uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]), true
}
