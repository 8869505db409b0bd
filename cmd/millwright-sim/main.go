// Command millwright-sim runs the simulated cloud as a driver plugin; see
// internal/simserver and `millwright-sim --help`.
package main

import (
	"os"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/simserver"
)

func main() {
	cli.Main("millwright-sim", simserver.NewCommand(os.Stderr))
}
