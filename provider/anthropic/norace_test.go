//go:build !race

package anthropic

// raceDetector: see race_test.go.
const raceDetector = false
