package bootstraptoken

import (
	"regexp"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// The bootstrap token format (k8s.io/cluster-bootstrap): [a-z0-9]{6}.[a-z0-9]{16}.
var tokenFormat = regexp.MustCompile(`^[a-z0-9]{6}\.[a-z0-9]{16}$`)

func TestIDIsDeterministicAndWellFormed(t *testing.T) {
	a, b := ID("uid-1"), ID("uid-2")
	if a != ID("uid-1") || a == b {
		t.Fatalf("ID(uid-1)=%s twice %s, ID(uid-2)=%s", a, ID("uid-1"), b)
	}
	secret, err := NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	token := Token(a, secret)
	if !tokenFormat.MatchString(token) {
		t.Fatalf("token %q is not in the bootstrap token format", token)
	}
	if id, s, ok := Split(token); !ok || id != a || s != secret {
		t.Fatalf("Split(%q) = %q %q %v", token, id, s, ok)
	}
	if _, _, ok := Split("abc.def"); ok {
		t.Error("Split accepted a malformed token")
	}
	if Key(a).Namespace != "kube-system" || Key(a).Name != "bootstrap-token-"+a {
		t.Errorf("key %v", Key(a))
	}
}

func TestBuildAndExpiration(t *testing.T) {
	exp := time.Date(2030, 1, 2, 3, 4, 5, 0, time.FixedZone("x", 3600))
	s := Build(Spec{ID: "abcdef", Secret: "0123456789abcdef", Expiration: exp, Description: "d"})
	if s.Type != corev1.SecretTypeBootstrapToken || s.Namespace != "kube-system" || s.StringData[KeyExpiration] != "2030-01-02T02:04:05Z" {
		t.Fatalf("secret %+v", s)
	}
	// As the API server returns it: stringData merged into data.
	s.Data = map[string][]byte{}
	for k, v := range s.StringData {
		s.Data[k] = []byte(v)
	}
	if got, ok := Expiration(s); !ok || !got.Equal(exp) {
		t.Errorf("Expiration = %v %v, want %v", got, ok, exp)
	}
	if SecretOf(s) != "0123456789abcdef" {
		t.Errorf("SecretOf = %q", SecretOf(s))
	}
	delete(s.Data, KeyExpiration)
	if _, ok := Expiration(s); ok {
		t.Error("a token without expiration has one")
	}
}
