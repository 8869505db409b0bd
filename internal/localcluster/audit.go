package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
)

// readsAuditPolicy logs each read request once, without its body: a get
// or list when its answer is complete, a watch when it starts.
const readsAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["get", "list", "watch"]
- level: None
`

// auditLogMaxMB is the audit log's size in MB past which kube-apiserver
// would rotate it: 1 TiB, never.
const auditLogMaxMB = 1 << 20

// AuditLogPath is the API server's audit log of read requests, one JSON
// event a line, when Options.AuditReads is set; "" otherwise.
func (c *Cluster) AuditLogPath() string {
	if !c.opts.AuditReads {
		return ""
	}
	return filepath.Join(c.dir, "logs", "audit.log")
}

// auditArgs are kube-apiserver's flags for Options.AuditReads, after
// writing its policy file.
func (c *Cluster) auditArgs() ([]string, error) {
	if !c.opts.AuditReads {
		return nil, nil
	}
	policy := filepath.Join(c.dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(readsAuditPolicy), 0o600); err != nil {
		return nil, fmt.Errorf("writing the audit policy: %w", err)
	}
	return []string{"--audit-policy-file=" + policy, "--audit-log-path=" + c.AuditLogPath(), "--audit-log-format=json",
		// One file for the whole run: a reader keeps its offset into it
		// (the benchmark, per scenario), and kube-apiserver would rotate
		// it at 100 MB, which an update of 5000 Machines passes.
		fmt.Sprintf("--audit-log-maxsize=%d", auditLogMaxMB)}, nil
}
