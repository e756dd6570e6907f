package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/changerate/changerate/internal/realdata"
)

var updateReadme = flag.Bool("update-readme", false, "rewrite the README's pipe example output from the programs")

// readmePipe finds the README's pipe example: the command in the marker
// comment and the fenced block after it that shows its output.
var readmePipe = regexp.MustCompile("(?s)<!-- readme-pipe-example: (.*?) -->\n```\n(.*?)```\n")

// readmeMaxLines bounds the example's block: a front door shows the start of
// the output and says how much follows.
const readmeMaxLines = 24

// TestREADMEPipeExample: the output the README shows under its pipe example
// is what the command in its marker prints today, on the real file it names
// (run with -update-readme to rewrite it).
func TestREADMEPipeExample(t *testing.T) {
	data := realdata.Dir(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	readmePath := filepath.Join(root, "README.md")
	readme, err := os.ReadFile(readmePath)
	if err != nil {
		t.Fatal(err)
	}
	m := readmePipe.FindSubmatchIndex(readme)
	if m == nil {
		t.Fatal("README.md has no <!-- readme-pipe-example: ... --> marker followed by a fenced block")
	}
	command := string(readme[m[2]:m[3]])
	bin := t.TempDir()
	for _, name := range []string{"ingest", "aggregator"} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(bin, name), "./cmd/"+name)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	shell := strings.NewReplacer(
		"go run ./cmd/ingest", filepath.Join(bin, "ingest"),
		"go run ./cmd/aggregator", filepath.Join(bin, "aggregator"),
		"../shared/data", data,
	).Replace(command)
	cmd := exec.Command("sh", "-c", "set -e; "+shell)
	cmd.Dir = root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s: %v\n%s", command, err, stderr.String())
	}
	want := shown(stdout.String())
	got := string(readme[m[4]:m[5]])
	if got == want {
		return
	}
	if *updateReadme {
		out := append(append(append([]byte{}, readme[:m[4]]...), want...), readme[m[5]:]...)
		if err := os.WriteFile(readmePath, out, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's pipe example output differs from what `%s` prints (go test ./cmd/aggregator -run TestREADMEPipeExample -update-readme rewrites it):\n--- README\n%s--- program\n%s", command, got, want)
}

// shown is the part of out the README shows: its first readmeMaxLines lines
// and, when there are more, how many.
func shown(out string) string {
	lines := strings.SplitAfter(out, "\n")
	if lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	if len(lines) <= readmeMaxLines {
		return strings.Join(lines, "")
	}
	return strings.Join(lines[:readmeMaxLines], "") + fmt.Sprintf("… %d more lines\n", len(lines)-readmeMaxLines)
}
