//go:build race

package store

// raceDetector is true when the tests run with -race.
const raceDetector = true
