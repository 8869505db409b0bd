// Command millwright-libvirt runs the libvirt driver plugin; see
// internal/libvirtserver and `millwright-libvirt --help`.
package main

import (
	"os"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/libvirtserver"
)

func main() {
	cli.Main("millwright-libvirt", libvirtserver.NewCommand(os.Stderr))
}
