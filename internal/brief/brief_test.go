package brief

import "testing"

func TestBrief(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{Truncate("abcdef", 6), "abcdef"},
		{Truncate("abcdefg", 6), "abc..."},
		{OrNone(""), "(none)"},
		{OrNone("v1.31"), "v1.31"},
		{List([]string{"a", "b"}, 2, ", "), "a, b"},
		{List([]string{"a", "b", "c", "d"}, 2, ", "), "a, b and 2 more"},
		{List([]string{"a x", "b y", "c z"}, 2, "; "), "a x; b y; and 1 more"},
	} {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}
