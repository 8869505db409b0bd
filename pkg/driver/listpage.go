package driver

import (
	"slices"
	"strings"
)

// PageOf answers req from every VM of its class, for a driver that lists
// them all at once (a map in memory, a hypervisor's domains): the VMs in
// providerID order after req.PageToken, at most req.PageSize of them (all
// with 0), and while VMs remain the last one's providerID as the
// NextPageToken. So a VM that exists through the whole listing is on
// exactly one page, however many are made or deleted meanwhile. vms is
// sorted in place.
func PageOf(vms []ListedVM, req *ListMachinesRequest) *ListMachinesResponse {
	slices.SortFunc(vms, func(a, b ListedVM) int { return strings.Compare(a.ProviderID, b.ProviderID) })
	if req.PageToken != "" {
		after, found := slices.BinarySearchFunc(vms, req.PageToken, func(vm ListedVM, token string) int {
			return strings.Compare(vm.ProviderID, token)
		})
		if found {
			after++
		}
		vms = vms[after:]
	}
	if req.PageSize <= 0 || len(vms) <= int(req.PageSize) {
		return &ListMachinesResponse{VMs: vms}
	}
	page := slices.Clone(vms[:req.PageSize])
	return &ListMachinesResponse{VMs: page, NextPageToken: page[len(page)-1].ProviderID}
}
