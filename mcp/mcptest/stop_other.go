//go:build !unix

package mcptest

// stopParent does nothing where there are no stop signals.
func stopParent() {}
