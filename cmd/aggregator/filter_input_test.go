package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
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

// TestTruncatedGzipKeepsWholeLines: a compressed input that breaks off
// (truncated, or corrupt further on) is used up to its last whole line, as
// ingest does: the estimates are those of the whole lines alone, the line
// cut short is dropped, and one dead letter (reason corrupt, at that
// line's number) and the summary report the rest as abandoned; sorted or
// in input order alike. Without the cut reader the run fails with
// "unexpected EOF" and publishes nothing.
func TestTruncatedGzipKeepsWholeLines(t *testing.T) {
	var plain bytes.Buffer
	for _, l := range genLog(11, 40, 96) {
		plain.Write(l)
		plain.WriteByte('\n')
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	corrupt := bytes.Clone(gz.Bytes())
	corrupt[len(corrupt)*2/3] ^= 0xff // a flipped byte: corrupt data or a checksum error
	for _, tc := range []struct {
		name string
		in   []byte
	}{
		{"truncated", gz.Bytes()[:gz.Len()/2]},
		{"corrupt", corrupt},
	} {
		// What a gzip reader gets before the damage, and its whole lines.
		zr, err := gzip.NewReader(bytes.NewReader(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		read, err := io.ReadAll(zr)
		if err == nil {
			t.Fatalf("%s: the damaged stream decompressed without error", tc.name)
		}
		whole := read[:bytes.LastIndexByte(read, '\n')+1]
		line := bytes.Count(whole, []byte{'\n'}) + 1
		if line < 10 || len(whole) == len(read) {
			t.Fatalf("%s: %d whole lines, %d bytes cut short: pick another cut", tc.name, line-1, len(read)-len(whole))
		}
		for _, sorted := range []string{"--sort=true", "--sort=false"} {
			want, _, err := filter(t, whole, sorted)
			if err != nil {
				t.Fatal(err)
			}
			got, stderr, err := filter(t, tc.in, sorted)
			if err != nil {
				t.Fatalf("%s %s: %v\n%s", tc.name, sorted, err, stderr)
			}
			if got != want || want == "" {
				t.Errorf("%s %s: %d bytes of estimates, want those of the %d whole lines (%d bytes), byte-identical", tc.name, sorted, len(got), line-1, len(want))
			}
			dl := fmt.Sprintf(`"position":"stdin:%d","reason":"corrupt"`, line)
			for _, want := range []string{dl, "input abandoned", "corrupt: 1 (dead letters)"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("%s %s: stderr lacks %q:\n%s", tc.name, sorted, want, stderr)
				}
			}
			if !regexp.MustCompile(fmt.Sprintf(`lines read +%d\b`, line-1)).MatchString(stderr) {
				t.Errorf("%s %s: the summary does not count the %d whole lines read:\n%s", tc.name, sorted, line-1, stderr)
			}
		}
	}
}
