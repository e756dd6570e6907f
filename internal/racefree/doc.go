// Package racefree holds the test that keeps scripts/race-free-packages
// true: the packages listed there start no goroutine, so scripts/test.sh
// may run their tests without the race detector.
package racefree
