// Package version tells which build of Millwright a program is, for
// --version and the image's labels.
package version

import "runtime/debug"

// Version is set at link time by the image build (hack/image):
//
//	go build -ldflags "-X github.com/millwright-dev/millwright/internal/version.Version=v1.2.3"
//
// Empty in other builds, where String falls back to what the Go toolchain
// stamped into the binary.
var Version string

// String is Version, else the main module's version the toolchain derived
// from the repository (a tag, or a pseudo-version with the commit and
// "+dirty"), else "(devel)".
func String() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
