//go:build race

package jobs_test

// raceDetector tells whether the tests run under the race detector, which
// makes SQLite (C transpiled to Go, every pointer checked) about ten times
// slower: the stress tests then use fewer jobs on SQLite.
const raceDetector = true
