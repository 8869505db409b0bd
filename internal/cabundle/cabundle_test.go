package cabundle_test

import (
	"errors"
	"testing"

	certutil "k8s.io/client-go/util/cert"

	"github.com/millwright-dev/millwright/internal/cabundle"
)

// The rule, case by case.
func TestParse(t *testing.T) {
	ca, _, err := certutil.GenerateSelfSignedCertKey("ca", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pool, err := cabundle.Parse(ca); err != nil || pool == nil {
		t.Fatalf("Parse of a CA certificate: %v", err)
	}
	if _, err := cabundle.Parse(append(append([]byte("\n"), ca...), ca...)); err != nil {
		t.Errorf("Parse of two certificates: %v", err)
	}
	for name, tc := range map[string]struct {
		bundle []byte
		want   error
	}{
		"nil":           {nil, cabundle.ErrMissing},
		"white space":   {[]byte(" \n"), cabundle.ErrMissing},
		"not PEM":       {[]byte("ca"), cabundle.ErrNotPEM},
		"bad DER":       {[]byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), cabundle.ErrNotPEM},
		"a key":         {[]byte("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), cabundle.ErrNotPEM},
		"trailing junk": {append(append([]byte(nil), ca...), "junk"...), cabundle.ErrNotPEM},
	} {
		if _, err := cabundle.Parse(tc.bundle); !errors.Is(err, tc.want) {
			t.Errorf("%s: Parse = %v, want %v", name, err, tc.want)
		}
	}
}
