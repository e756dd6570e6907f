package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
)

// TestREADMEConfigTable: docs/configuration.md's aggregator table is
// exactly what --config-reference prints (regenerate it from there).
func TestREADMEConfigTable(t *testing.T) {
	var ref bytes.Buffer
	if err := run(context.Background(), []string{"--config-reference"}, strings.NewReader(""), &ref, io.Discard); err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(readme, bytes.TrimSpace(ref.Bytes())) {
		t.Error("docs/configuration.md's aggregator table differs from `go run ./cmd/aggregator --config-reference`: paste the command's output into docs/configuration.md")
	}
}
