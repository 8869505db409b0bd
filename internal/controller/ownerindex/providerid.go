package ownerindex

// ProviderIDIndex is the cache field index on spec.providerID that the
// machine controller registers on Machines (control cluster) and on Nodes
// (target cluster). Other controllers list through it by this name, so
// it lives here, below all of them.
const ProviderIDIndex = "spec.providerID"
