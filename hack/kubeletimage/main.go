// Command kubeletimage builds the container images the kubelet node image
// carries, since its VMs reach no registry: the pod sandbox's pause image
// and a small workload (an HTTP server), each one static binary of this
// directory on an empty base, written as one docker-archive tarball that
// `ctr images import` reads (hack/tools/cloudimage.sh kubelet imports it
// into the image's containerd; docs/providers/node-images.md).
//
//	go run ./hack/kubeletimage -out images.tar -pause REF -hello REF
package main

import (
	"archive/tar"
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// program is one image: the binary built from ./hack/kubeletimage/<dir>,
// at /<dir> in the image, its entrypoint.
type program struct {
	dir, ref string
	config   v1.Config
}

func main() {
	out := flag.String("out", "images.tar", "the docker-archive tarball to write")
	pause := flag.String("pause", "localhost/millwright/pause:v1", "the pause image's reference (containerd's sandbox image)")
	hello := flag.String("hello", "localhost/millwright/hello:v1", "the workload image's reference")
	flag.Parse()
	programs := []program{
		// 65535: the pause process needs no privilege, as the upstream image's.
		{dir: "pause", ref: *pause, config: v1.Config{User: "65535:65535"}},
		{dir: "hello", ref: *hello, config: v1.Config{User: "65532:65532", ExposedPorts: map[string]struct{}{"8080/tcp": {}}}},
	}
	if err := run(context.Background(), *out, programs); err != nil {
		fmt.Fprintln(os.Stderr, "kubeletimage:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, out string, programs []program) error {
	tmp, err := os.MkdirTemp("", "kubeletimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	images := map[name.Reference]v1.Image{}
	for _, p := range programs {
		ref, err := name.ParseReference(p.ref, name.StrictValidation)
		if err != nil {
			return err
		}
		bin := filepath.Join(tmp, p.dir)
		cmd := exec.CommandContext(ctx, "go", "build", "-trimpath", "-ldflags=-s -w", "-o", bin, "./hack/kubeletimage/"+p.dir)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go build %s: %w", p.dir, err)
		}
		img, err := image(bin, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.ref, err)
		}
		digest, err := img.Digest()
		if err != nil {
			return err
		}
		fmt.Printf("%s %s\n", ref, digest)
		images[ref] = img
	}
	return tarball.MultiRefWriteToFile(out, images)
}

// image is p's binary alone on an empty base, as its entrypoint. Every
// timestamp is the Unix epoch: the same binary gives the same digest.
func image(bin string, p program) (v1.Image, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := &tar.Header{Typeflag: tar.TypeReg, Name: p.dir, Mode: 0o755, Size: int64(len(data)), ModTime: time.Unix(0, 0)}
	if err := tw.WriteHeader(hdr); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerData := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerData)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(mutate.MediaType(empty.Image, types.DockerManifestSchema2), l)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", "amd64"
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = p.config
	cfg.Config.Entrypoint = []string{"/" + p.dir}
	return mutate.ConfigFile(img, cfg)
}
