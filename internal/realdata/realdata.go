// Package realdata locates the shared folder of real data for tests: the
// directory ../shared/data next to the repository root (never copied into
// the repository), or $CHANGERATE_DATA. When it is missing, a test is
// skipped, except under CI=true, where it fails: a CI run must not pass
// without the real-data tests having run.
package realdata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns the real-data directory, or skips (fails under CI=true) the
// test when it is missing or lacks any of the given entries (relative
// paths inside it).
func Dir(t testing.TB, need ...string) string {
	t.Helper()
	dir := os.Getenv("CHANGERATE_DATA")
	if dir == "" {
		dir = filepath.Join(root(), "..", "shared", "data")
	}
	for _, p := range append([]string{""}, need...) {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("real data missing under CI=true: %v", err)
			}
			t.Skipf("real data missing (set CHANGERATE_DATA; CI=true makes this fatal): %v", err)
		}
	}
	return dir
}

// root is the directory holding go.mod, found from the working directory
// upwards (a test's working directory is its package directory).
func root() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}
