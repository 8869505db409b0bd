package driver

import (
	"slices"
	"testing"
)

func TestPageOfWalksTheVMsInProviderIDOrder(t *testing.T) {
	vms := func(ids ...string) []ListedVM {
		out := make([]ListedVM, len(ids))
		for i, id := range ids {
			out[i] = ListedVM{ProviderID: id}
		}
		return out
	}
	ids := func(r *ListMachinesResponse) []string {
		var out []string
		for _, vm := range r.VMs {
			out = append(out, vm.ProviderID)
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		vms       []ListedVM
		size      int32
		token     string
		want      []string
		wantToken string
	}{
		{"every VM without a page size", vms("c", "a", "b"), 0, "", []string{"a", "b", "c"}, ""},
		{"the first page", vms("c", "a", "b"), 2, "", []string{"a", "b"}, "b"},
		{"the page after the token", vms("c", "a", "b", "d"), 2, "b", []string{"c", "d"}, ""},
		{"after a token whose VM is gone", vms("c", "a", "d"), 1, "b", []string{"c"}, "c"},
		{"a last page exactly full", vms("a", "b"), 2, "", []string{"a", "b"}, ""},
		{"past the last VM", vms("a", "b"), 2, "b", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PageOf(tc.vms, &ListMachinesRequest{PageSize: tc.size, PageToken: tc.token})
			if !slices.Equal(ids(got), tc.want) || got.NextPageToken != tc.wantToken {
				t.Errorf("page %v, next token %q; want %v, %q", ids(got), got.NextPageToken, tc.want, tc.wantToken)
			}
		})
	}
}
