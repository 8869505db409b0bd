package main

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// options is what build makes: where, which version, for which
// architecture.
type options struct {
	out      string // OCI layout directory
	version  string
	revision string
	source   string
	arch     string
}

// versionVar is the variable the linker sets to the version, so that
// `millwright-manager --version` says what the image's label says.
const versionVar = "github.com/millwright-dev/millwright/internal/version.Version"

// user is the image's user, distroless's "nonroot": the chart's and
// config/manager's pods run as it too (runAsUser 65532).
const (
	uid      = 65532
	userName = "nonroot"
	home     = "/home/nonroot"
)

// build compiles the binaries, assembles the image and writes it as the
// only image of a new OCI layout at o.out. It returns the image's digest.
func build(ctx context.Context, o options) (v1.Hash, error) {
	binDir, err := os.MkdirTemp("", "millwright-image-")
	if err != nil {
		return v1.Hash{}, err
	}
	defer os.RemoveAll(binDir)
	if err := compile(ctx, o, binDir); err != nil {
		return v1.Hash{}, err
	}
	img, err := assemble(o, binDir)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := os.RemoveAll(o.out); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(o.out, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	// The tag, as `skopeo copy oci:DIR:TAG` and crane name it.
	ref := layout.WithAnnotations(map[string]string{"org.opencontainers.image.ref.name": o.version})
	if err := p.AppendImage(img, ref); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// compile builds every binary statically for linux/o.arch into dir: with
// CGO_ENABLED=0 the image needs no libc, so its base can be empty.
func compile(ctx context.Context, o options, dir string) error {
	args := []string{"build", "-trimpath", "-ldflags", "-s -w -X " + versionVar + "=" + o.version, "-o", dir + string(filepath.Separator)}
	for _, b := range binaries {
		args = append(args, "./cmd/"+b)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+o.arch)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go %v: %w", args, err)
	}
	return nil
}

// assemble makes the image: an empty base, a layer with the user and the
// directories a program may expect (/tmp, the user's home), a layer with
// the binaries, and the config. Every timestamp is the Unix epoch, so the
// same binaries always give the same digest.
func assemble(o options, binDir string) (v1.Image, error) {
	base, err := layer(baseFiles())
	if err != nil {
		return nil, err
	}
	var bins []file
	for _, b := range binaries {
		data, err := os.ReadFile(filepath.Join(binDir, b))
		if err != nil {
			return nil, err
		}
		bins = append(bins, file{name: b, mode: 0o755, data: data})
	}
	progs, err := layer(bins)
	if err != nil {
		return nil, err
	}

	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.AppendLayers(img, base, progs)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", o.arch
	cfg.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	cfg.Config = v1.Config{
		Entrypoint: []string{"/" + binaries[0]},
		User:       fmt.Sprintf("%d:%d", uid, uid),
		WorkingDir: "/",
		Env:        []string{"PATH=/", "HOME=" + home},
		Labels: map[string]string{
			"org.opencontainers.image.source":      o.source,
			"org.opencontainers.image.version":     o.version,
			"org.opencontainers.image.revision":    o.revision,
			"org.opencontainers.image.title":       "millwright",
			"org.opencontainers.image.description": "Millwright's machine controller manager and drivers",
			"org.opencontainers.image.licenses":    "Apache-2.0",
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// baseFiles is the base layer: the user in /etc/passwd and /etc/group (so
// that tools and Go's os/user resolve 65532), its home, and a /tmp.
//
// No CA certificates: the manager's one TLS peer is the API server, whose
// CA comes from the ServiceAccount's mount or the kubeconfig, and a
// driver's cloud credentials and CAs are the driver's own.
func baseFiles() []file {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:%s:/sbin/nologin\n", userName, uid, uid, userName, home)
	group := fmt.Sprintf("root:x:0:\n%s:x:%d:\n", userName, uid)
	return []file{
		{name: "etc/", mode: 0o755},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, owner: uid},
		{name: "tmp/", mode: 0o1777},
	}
}

// file is one entry of a layer: a directory when name ends in "/".
type file struct {
	name  string
	mode  int64
	owner int
	data  []byte
}

// layer makes a gzipped OCI layer of files, in their order.
func layer(files []file) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{
			Name: f.name, Mode: f.mode, Uid: f.owner, Gid: f.owner,
			ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
		}
		if f.name[len(f.name)-1] == '/' {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag, h.Size = tar.TypeReg, int64(len(f.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(data)), nil
	}, tarball.WithMediaType(types.OCILayer))
}
