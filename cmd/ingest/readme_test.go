package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestREADMEConfigTable: docs/configuration.md's ingest table is
// exactly what --config-reference prints (regenerate it from there).
func TestREADMEConfigTable(t *testing.T) {
	var ref, errs bytes.Buffer
	if code := run([]string{"--config-reference"}, strings.NewReader(""), &ref, &errs); code != 0 {
		t.Fatalf("exit %d: %s", code, errs.String())
	}
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, bytes.TrimSpace(ref.Bytes())) {
		t.Error("docs/configuration.md's ingest table differs from `go run ./cmd/ingest --config-reference`: paste the command's output into docs/configuration.md")
	}
}
