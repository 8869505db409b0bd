package main

import (
	"archive/tar"
	"context"
	"debug/elf"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// The image the build writes is an OCI layout with one image whose config
// runs the manager as the non-root user with the labels set, and whose
// filesystem, unpacked, holds static binaries that run: `millwright-manager
// --version` from the unpacked tree says the image's version.
func TestImage(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root) // build compiles ./cmd/... of the repository
	o := options{
		out:      filepath.Join(t.TempDir(), "image"),
		version:  "v0.0.0-imagetest",
		revision: "0123456789abcdef0123456789abcdef01234567",
		source:   "https://example.com/millwright",
		arch:     runtime.GOARCH,
	}
	if _, err := build(context.Background(), o); err != nil {
		t.Fatal(err)
	}

	p, err := layout.FromPath(o.out)
	if err != nil {
		t.Fatal(err)
	}
	idx, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	im, err := idx.IndexManifest()
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Manifests) != 1 {
		t.Fatalf("the layout holds %d manifests, want 1", len(im.Manifests))
	}
	if got := im.Manifests[0].Annotations["org.opencontainers.image.ref.name"]; got != o.version {
		t.Errorf("ref.name annotation %q, want %q", got, o.version)
	}
	img, err := idx.Image(im.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.OS != "linux" || cfg.Architecture != o.arch {
		t.Errorf("platform %s/%s, want linux/%s", cfg.OS, cfg.Architecture, o.arch)
	}
	if !slices.Equal(cfg.Config.Entrypoint, []string{"/millwright-manager"}) {
		t.Errorf("entrypoint %q, want [/millwright-manager]", cfg.Config.Entrypoint)
	}
	// Numeric, so that Kubernetes' runAsNonRoot can check it without
	// reading the image's /etc/passwd.
	if cfg.Config.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532 (non-root, numeric)", cfg.Config.User)
	}
	for k, want := range map[string]string{
		"org.opencontainers.image.source":   o.source,
		"org.opencontainers.image.version":  o.version,
		"org.opencontainers.image.revision": o.revision,
	} {
		if got := cfg.Config.Labels[k]; got != want {
			t.Errorf("label %s=%q, want %q", k, got, want)
		}
	}

	tree := t.TempDir()
	unpack(t, mutate.Extract(img), tree)
	passwd, err := os.ReadFile(filepath.Join(tree, "etc", "passwd"))
	if err != nil || !strings.Contains(string(passwd), ":65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532 (err %v):\n%s", err, passwd)
	}
	for _, b := range binaries {
		path := filepath.Join(tree, b)
		if isDynamic(t, path) {
			t.Errorf("/%s is dynamically linked: the empty base has no libc", b)
		}
		out, err := exec.Command(path, "--version").CombinedOutput()
		if err != nil {
			t.Errorf("/%s --version: %v\n%s", b, err, out)
			continue
		}
		// A kubectl plugin calls itself as kubectl does: "kubectl millwright".
		if want := strings.Replace(b, "kubectl-", "kubectl ", 1) + " version " + o.version + "\n"; string(out) != want {
			t.Errorf("/%s --version printed %q, want %q", b, out, want)
		}
	}
}

// unpack writes the flattened filesystem r (a tar stream) under dir.
func unpack(t *testing.T, r io.ReadCloser, dir string) {
	t.Helper()
	defer r.Close()
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !filepath.IsLocal(h.Name) {
			t.Fatalf("the image has an entry outside its root: %q", h.Name)
		}
		path := filepath.Join(dir, h.Name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(path, 0o755); err != nil {
				t.Fatal(err)
			}
		case tar.TypeReg:
			f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, os.FileMode(h.Mode).Perm())
			if err != nil {
				t.Fatal(err)
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%s: unexpected tar entry type %c", h.Name, h.Typeflag)
		}
	}
}

// isDynamic reports whether the ELF binary at path asks for an interpreter
// (the dynamic loader).
func isDynamic(t *testing.T, path string) bool {
	t.Helper()
	f, err := elf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return true
		}
	}
	return false
}
