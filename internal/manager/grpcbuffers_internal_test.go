package manager

import (
	"testing"

	"google.golang.org/grpc/mem"
)

// The manager's gRPC buffers are at most twice the size asked for, up to
// 1 MiB; gRPC's default pool would give a 60 KiB page of ListMachines a
// 1 MiB buffer.
func TestGRPCBuffersAreAtMostTwiceTheMessage(t *testing.T) {
	pool := mem.DefaultBufferPool()
	for _, size := range []int{300, 5 << 10, 33 << 10, 60 << 10, 300 << 10, 600 << 10, 1 << 20} {
		buf := pool.Get(size)
		if got := cap(*buf); got < size || got >= 2*size {
			t.Errorf("a buffer for a message of %d bytes has room for %d, want at least the message and less than twice it", size, got)
		}
		pool.Put(buf)
	}
}
