package sim

import "encoding/json"

// lastKnownState is what the sim keeps on a Machine (status.lastKnownState)
// about its VM. The sim reads it back to find the VM a call is about when
// the Machine's providerID is not yet set; it never trusts it over the
// cloud's own records.
type lastKnownState struct {
	VM         string `json:"vm,omitempty"`
	ProviderID string `json:"providerID,omitempty"`
	// State is what the last call did: Created or Deleted.
	State string `json:"state,omitempty"`
}

func encodeState(vm *VM, state string) string {
	b, err := json.Marshal(lastKnownState{VM: vm.ID, ProviderID: vm.ProviderID, State: state})
	if err != nil {
		return "" // three strings always marshal
	}
	return string(b)
}

// decodeState reads a lastKnownState; anything unreadable (another
// driver's, or none) reads as empty.
func decodeState(s string) lastKnownState {
	var st lastKnownState
	if s == "" || json.Unmarshal([]byte(s), &st) != nil {
		return lastKnownState{}
	}
	return st
}
