// Command millwright-manager runs Millwright's controllers; see
// internal/manager and `millwright-manager --help`.
package main

import (
	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/manager"
)

func main() {
	cli.Main("millwright-manager", manager.NewCommand())
}
