package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
)

// TestGzipInput: a gzip-compressed observations file gives the same
// estimates as the plain one, concatenated members are read as one stream
// (as zcat does), and a compressed raw log is recognised like a plain one.
func TestGzipInput(t *testing.T) {
	var plain bytes.Buffer
	for _, l := range genLog(7, 6, 48) {
		plain.Write(l)
		plain.WriteByte('\n')
	}
	want, _, err := filter(t, plain.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	// Two gzip members, split in the middle of the input.
	half := bytes.LastIndexByte(plain.Bytes()[:plain.Len()/2], '\n') + 1
	var gz bytes.Buffer
	for _, part := range [][]byte{plain.Bytes()[:half], plain.Bytes()[half:]} {
		zw := gzip.NewWriter(&gz)
		zw.Write(part)
		zw.Close()
	}
	got, stderr, err := filter(t, gz.Bytes())
	if err != nil {
		t.Fatalf("%v; stderr %s", err, stderr)
	}
	if got != want || want == "" {
		t.Errorf("gzip input: %d bytes of estimates, want the plain input's %d, byte-identical", len(got), len(want))
	}

	raw := "2006-02-23T10:33:29.285Z   200       1024 http://www.example.dk/ - - text/html #001 20060223103328263+18 sha1:ABCDEFGHIJKLMNOPQRSTUVWXYZ234567 - -\n"
	var zraw bytes.Buffer
	zw := gzip.NewWriter(&zraw)
	zw.Write([]byte(raw))
	zw.Close()
	_, _, err = filter(t, zraw.Bytes())
	if !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), "--format=heritrix") {
		t.Errorf("compressed raw log: %v, want the format that reads it", err)
	}

	_, _, err = filter(t, []byte{0x1f, 0x8b, 'x'})
	if err == nil || !strings.Contains(err.Error(), "gzip") {
		t.Errorf("truncated gzip: %v, want a gzip error", err)
	}
}

// TestFilterInterrupted: Ctrl-C (or SIGTERM) on a filter reading a live
// pipe prints the summary and says it was interrupted, not "context
// canceled".
func TestFilterInterrupted(t *testing.T) {
	pr, pw := io.Pipe()
	defer pw.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var stderr bytes.Buffer
	go func() {
		done <- run(ctx, []string{"--in=-", "--store=memory", "--out=-", "--sort=false", "--log-level=error"}, pr, io.Discard, &stderr)
	}()
	for _, l := range genLog(3, 2, 5) {
		if _, err := pw.Write(append(l, '\n')); err != nil {
			t.Fatal(err)
		}
	}
	cancel()
	err := <-done
	if err == nil || !strings.Contains(err.Error(), "interrupted") || strings.Contains(err.Error(), "context canceled") {
		t.Errorf("error %v, want one saying the run was interrupted", err)
	}
	if !strings.Contains(stderr.String(), "aggregator summary:") {
		t.Errorf("no summary on stderr:\n%s", stderr.String())
	}
}

// TestOwnOutputIsNamed: the aggregator's own estimates (or dead letters)
// fed back to it are named as such, not reported as a JSON decoding error.
func TestOwnOutputIsNamed(t *testing.T) {
	var plain bytes.Buffer
	for _, l := range genLog(5, 3, 24) {
		plain.Write(l)
		plain.WriteByte('\n')
	}
	estimates, _, err := filter(t, plain.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ in, want string }{
		{estimates, "these are estimates"},
		{`{"time":"2026-11-21T12:31:02Z","stage":"ingest","format":"squid","position":"a:1","reason":"fields","error":"x","input":"y"}` + "\n", "these are dead letters"},
	} {
		_, _, err := filter(t, []byte(tc.in))
		if !errors.Is(err, errNothingUsable) || !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), "unknown field") {
			t.Errorf("got %v, want %q", err, tc.want)
		}
	}
}
