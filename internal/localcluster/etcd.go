package localcluster

import (
	"fmt"
	"path/filepath"
)

// etcd is a single-member etcd serving plain HTTP on loopback: nothing but
// the API server talks to it, and TLS here would only slow the start.
func (c *Cluster) etcd() (*component, error) {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.ports.etcdPeer)
	return &component{
		name: Etcd,
		args: []string{
			"--name=localcluster",
			"--data-dir=" + filepath.Join(c.dir, "etcd"),
			"--listen-client-urls=" + client,
			"--advertise-client-urls=" + client,
			"--listen-peer-urls=" + peer,
			"--initial-advertise-peer-urls=" + peer,
			"--initial-cluster=localcluster=" + peer,
			// The data is thrown away with the cluster; fsync would only
			// make every API write wait on the disk.
			"--unsafe-no-fsync=true",
		},
		// /health answers {"health":"true"} once the member serves
		// linearizable reads, i.e. has a leader.
		probe: httpProbe(nil, client+"/health", `"health":"true"`),
	}, nil
}
