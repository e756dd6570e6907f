// Package realdata locates the shared folder of real data for tests: the
// directory ../shared/data next to the repository root (never copied into
// the repository), or $CHANGERATE_DATA. When it is missing, a test is
// skipped, except under CI=true, where it fails: a CI run must not pass
// without the real-data tests having run.
package realdata

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Dir returns the real-data directory, or skips (fails under CI=true) the
// test when it is missing or lacks any of the given entries (relative
// paths inside it).
func Dir(t testing.TB, need ...string) string {
	t.Helper()
	dir := os.Getenv("CHANGERATE_DATA")
	if dir == "" {
		dir = filepath.Join(Root(), "..", "shared", "data")
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

// Root is the repository's root: the directory holding the product
// module's go.mod, found from the working directory upwards (a test's
// working directory is its package directory; the research module's
// packages are one module deeper, under research/).
func Root() string {
	dir, err := os.Getwd()
	if err != nil {
		return "."
	}
	for d := dir; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && isProduct(b) {
			return d
		}
		if filepath.Dir(d) == d {
			return dir
		}
	}
}

// DefaultDir is the real-data directory a program uses when given none:
// $CHANGERATE_DATA, else ../shared/data beside the repository root.
func DefaultDir() string {
	if dir := os.Getenv("CHANGERATE_DATA"); dir != "" {
		return dir
	}
	return filepath.Join(Root(), "..", "shared", "data")
}

// isProduct reports whether a go.mod file declares the product module.
func isProduct(gomod []byte) bool {
	for _, line := range strings.Split(string(gomod), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "module" {
			return f[1] == "github.com/changerate/changerate"
		}
	}
	return false
}
