//go:build !race

package transport

// raceDetector is true when the tests run with -race.
const raceDetector = false
