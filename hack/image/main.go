// Command image builds Millwright's container image without a container
// engine: it compiles the programs in binaries as static Linux binaries and
// assembles them with go-containerregistry on an empty base, with a
// passwd/group layer for the non-root user, into an OCI image layout.
//
//	go run ./hack/image -out _output/image   (what `make image` runs)
//
// Push the result with any OCI tool, e.g. `crane push _output/image REF`
// or `skopeo copy oci:_output/image docker://REF`. docs/helm.md says which
// binaries the image holds and how the chart runs them.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strings"
)

// binaries are the programs of the image, each built from ./cmd/NAME into
// /NAME. The first is the entrypoint.
var binaries = []string{"millwright-manager", "millwright-sim", "millwright-libvirt", "millwright-aws", "kubectl-millwright"}

func main() {
	o := options{}
	flag.StringVar(&o.out, "out", "_output/image", "directory of the OCI image layout to write (replaced)")
	flag.StringVar(&o.version, "version", "", "the image's version: --version of its programs and the org.opencontainers.image.version label (default `git describe --tags --always --dirty`)")
	flag.StringVar(&o.revision, "revision", "", "the commit built, for the org.opencontainers.image.revision label (default `git rev-parse HEAD`)")
	flag.StringVar(&o.source, "source", "https://github.com/millwright-dev/millwright", "the org.opencontainers.image.source label")
	flag.StringVar(&o.arch, "arch", runtime.GOARCH, "GOARCH of the binaries and the image")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := fillFromGit(ctx, &o); err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	digest, err := build(ctx, o)
	if err != nil {
		fmt.Fprintln(os.Stderr, "image:", err)
		os.Exit(1)
	}
	fmt.Printf("wrote %s (%s, %s/%s): %s\n", o.out, o.version, "linux", o.arch, digest)
}

// fillFromGit sets the version and revision the flags left empty from the
// repository the command runs in.
func fillFromGit(ctx context.Context, o *options) error {
	git := func(args ...string) (string, error) {
		out, err := exec.CommandContext(ctx, "git", args...).Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
		}
		return strings.TrimSpace(string(out)), nil
	}
	var err error
	if o.version == "" {
		if o.version, err = git("describe", "--tags", "--always", "--dirty"); err != nil {
			return err
		}
	}
	if o.revision == "" {
		o.revision, err = git("rev-parse", "HEAD")
	}
	return err
}
