package racefree

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// listed reads scripts/race-free-packages: one directory of the module per
// line, # comments.
func listed(t *testing.T) []string {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "scripts", "race-free-packages"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var dirs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		dirs = append(dirs, line)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return dirs
}

// concurrency returns where file starts goroutines: go statements and calls
// of Parallel or RunParallel (testing's, or anything so named).
func concurrency(fset *token.FileSet, file *ast.File) []string {
	var at []string
	ast.Inspect(file, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.GoStmt:
			at = append(at, fset.Position(n.Pos()).String()+": go statement")
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Parallel" || sel.Sel.Name == "RunParallel") {
				at = append(at, fset.Position(n.Pos()).String()+": "+sel.Sel.Name)
			}
		}
		return true
	})
	return at
}

// TestListedPackagesStartNoGoroutine: every .go file (tests included) of
// every listed package is free of go statements and parallel tests, so
// running its tests without -race hides no race.
func TestListedPackagesStartNoGoroutine(t *testing.T) {
	dirs := listed(t)
	if len(dirs) == 0 {
		t.Fatal("scripts/race-free-packages lists no package")
	}
	for _, dir := range dirs {
		files, err := filepath.Glob(filepath.Join("..", "..", dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Errorf("%s: no Go files (%v)", dir, err)
			continue
		}
		fset := token.NewFileSet()
		for _, name := range files {
			file, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Errorf("%s: %v", name, err)
				continue
			}
			for _, at := range concurrency(fset, file) {
				t.Errorf("%s: remove the package from scripts/race-free-packages (its tests then run under -race)", at)
			}
		}
	}
}

// TestConcurrencyFinds: the check sees each form it looks for.
func TestConcurrencyFinds(t *testing.T) {
	src := `package p
import "testing"
func f() { go g() }
func g() {}
func TestX(t *testing.T) { t.Parallel() }
func BenchmarkX(b *testing.B) { b.RunParallel(func(pb *testing.PB) {}) }
func h() { defer g(); g() }
`
	fset := token.NewFileSet()
	file, err := parser.ParseFile(fset, "p.go", src, 0)
	if err != nil {
		t.Fatal(err)
	}
	got := concurrency(fset, file)
	if len(got) != 3 {
		t.Fatalf("found %d places, want 3 (go, Parallel, RunParallel): %q", len(got), got)
	}
}
