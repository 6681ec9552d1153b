//go:build race

package anthropic

// raceDetector is whether the tests run under the race detector, whose
// sync.Pool drops a share of what it is given back: what a pool saves
// (encoding/json's scanner, for one) is then allocated anew at random,
// and a count of allocations means nothing.
const raceDetector = true
