// Command millwright-aws runs the AWS EC2 driver plugin; see
// internal/provider/aws/awsserver and `millwright-aws --help`.
package main

import (
	"os"

	"github.com/millwright-dev/millwright/internal/cli"
	"github.com/millwright-dev/millwright/internal/provider/aws/awsserver"
)

func main() {
	cli.Main("millwright-aws", awsserver.NewCommand(os.Stderr))
}
