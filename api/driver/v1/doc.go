// Package driverv1 is the Go code generated from driver.proto, the gRPC
// protocol between Millwright and a driver that runs as its own program.
// Use it through github.com/millwright-dev/millwright/pkg/driver (Dial,
// Serve), which converts to and from the Driver interface's types; this
// package is for tools and tests that speak the protocol directly.
// Regenerate it with `make generate`.
package driverv1
