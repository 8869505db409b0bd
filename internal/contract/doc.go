// Package contract is Millwright's side of the provider contract
// (docs/contract-providers.md) shared by the controllers: which version of a provider's
// kind to use (the CRD's contract label), the contract's status fields
// read from unstructured objects, and the cloning of *Template objects
// into per-Machine objects.
package contract
