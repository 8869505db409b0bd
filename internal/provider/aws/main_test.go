package aws

import (
	"fmt"
	"os"
	"testing"

	"github.com/millwright-dev/millwright/internal/motoserver"
)

// moto is the package's moto server: one for all tests, which never run
// in parallel, each with a cluster name of its own.
var moto *motoserver.Server

func TestMain(m *testing.M) {
	// The SDK's default chain must not find this machine's credentials or
	// wait for an instance metadata service that is not there.
	for k, v := range map[string]string{
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_SHARED_CREDENTIALS_FILE": os.DevNull, "AWS_CONFIG_FILE": os.DevNull,
		"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "", "AWS_SESSION_TOKEN": "", "AWS_PROFILE": "",
		"AWS_ROLE_ARN": "", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_CONTAINER_CREDENTIALS_FULL_URI": "",
		"AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
	} {
		if v == "" {
			os.Unsetenv(k)
		} else {
			os.Setenv(k, v)
		}
	}
	dir, err := os.MkdirTemp("", "aws-driver-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s, stop, err := motoserver.StartMain(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	moto = s
	code := m.Run()
	stop()
	os.RemoveAll(dir)
	os.Exit(code)
}
