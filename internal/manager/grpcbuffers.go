package manager

import (
	"google.golang.org/grpc/experimental"
	"google.golang.org/grpc/mem"
)

// grpcBufferExponents are the tiers of the manager's gRPC buffer pool: a
// buffer at every power of two from 256 B to 1 MiB, so a message of the
// driver protocol is read into and marshalled from a buffer at most twice
// its size.
//
// gRPC's default pool has no tier between 32 KiB and 1 MiB: each
// ListMachines page of 500 VMs (about 60 KiB) was read into a 1 MiB
// buffer, and the pool keeps its buffers across a garbage collection.
// During a rolling update at 5000 Machines, when the orphan collection
// lists its pages every few seconds, those buffers were 2.3 MiB of the
// manager's live heap (docs/benchmarks.md). A message over 1 MiB gets a
// buffer of its own size from gRPC's pool for any size, as before.
var grpcBufferExponents = []uint8{8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}

// The codec gRPC uses reads the process-wide default pool, not a
// connection's (experimental.WithBufferPool), and the default may only be
// set while the program initialises.
func init() {
	pool, err := mem.NewBinaryTieredBufferPool(grpcBufferExponents...)
	if err != nil {
		panic(err) // constant exponents, each below the word size
	}
	experimental.SetDefaultBufferPool(pool)
}
