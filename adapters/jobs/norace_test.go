//go:build !race

package jobs_test

// raceDetector: see race_test.go.
const raceDetector = false
