package sim

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// FuzzDecodeProviderSpec checks that no input makes DecodeProviderSpec
// panic, that every refusal is InvalidArgument with a message naming a
// field under "providerSpec", and that every accepted spec survives a
// round trip through JSON unchanged and still valid. The seeds below and
// those in testdata/fuzz make it a regular test too.
func FuzzDecodeProviderSpec(f *testing.F) {
	for _, seed := range []string{
		basicSpec,
		`{"region":"local","zones":["local-a"],"faults":{"seed":7,"create":{"latency":"1s","jitter":"1s","code":"Unavailable","count":2,"afterEffect":true}}}`,
		`{"region":"local","zones":["local-a","local-b"],"faults":{"bootFailure":{"probability":0.5},"nodeNotReady":{"after":"30s"},"outOfCapacityZones":["local-b"]}}`,
		`{"region":"local","zones":["local-a"],"tags":{"a":"b"},"bootDelay":"2s","requireInitialization":true}`,
		`{"region":"local","zones":["local-a"],"faults":{"create":{"latency":"-1s"}}}`,
		`{"region":"local","zones":[]}`,
		`{"region":"local","zones":["a"],"region":"b"}`,
		`{"faults":{"create":{"code":"Nope","probability":2}}}`,
		`[1,2,3]`,
		`null`,
		``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ps, err := DecodeProviderSpec(raw)
		if err != nil {
			if ps != nil {
				t.Fatalf("returned both a spec and the error %v", err)
			}
			if code := driver.CodeOf(err); code != driver.InvalidArgument {
				t.Fatalf("refused with %s, not InvalidArgument: %v", code, err)
			}
			if msg := driver.MessageOf(err); !strings.HasPrefix(msg, "providerSpec") || !strings.Contains(msg, ": ") {
				t.Fatalf("message %q does not name a field", msg)
			}
			return
		}
		again, err := json.Marshal(ps)
		if err != nil {
			t.Fatalf("an accepted spec does not marshal: %v", err)
		}
		ps2, err := DecodeProviderSpec(again)
		if err != nil {
			t.Fatalf("an accepted spec, re-encoded as %s, is refused: %v", again, err)
		}
		if !reflect.DeepEqual(normalize(ps), normalize(ps2)) {
			t.Fatalf("round trip changed the spec:\n%+v\n%+v", ps, ps2)
		}
	})
}

// normalize makes empty and nil maps and slices compare equal: JSON
// decoding yields one or the other depending on the input.
func normalize(ps *ProviderSpec) ProviderSpec {
	c := *ps
	if len(c.Tags) == 0 {
		c.Tags = nil
	}
	if c.Faults != nil {
		f := *c.Faults
		if len(f.OutOfCapacityZones) == 0 {
			f.OutOfCapacityZones = nil
		}
		c.Faults = &f
	}
	return c
}
