package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/changerate/changerate/ingest"
	"github.com/changerate/changerate/parse"
	"github.com/changerate/changerate/stream"
)

// deadLettersShown is how many dead letters a run writing them to stderr
// (--out=- --dead-letter=-, the defaults) prints; the others are counted
// in the summary. A wrong --format rejects every line: ten thousand
// dead letters on the terminal hide the hint.
const deadLettersShown = 5

// cappedLines passes the first max lines written to it to w and counts the
// others (safe as the WriterSink uses it: one Write at a time).
type cappedLines struct {
	w      io.Writer
	max    int
	shown  int
	hidden int64
}

func (c *cappedLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if c.shown >= c.max {
			if c.hidden == 0 {
				fmt.Fprintf(c.w, "ingest: more than %d dead letters: the others are counted in the summary, not printed (--dead-letter=FILE keeps them all)\n", c.max)
			}
			c.hidden += int64(bytes.Count(p, []byte{'\n'}))
			return n, nil
		}
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			_, err := c.w.Write(p)
			return n, err
		}
		if _, err := c.w.Write(p[:i+1]); err != nil {
			return n, err
		}
		c.shown++
		p = p[i+1:]
	}
	return n, nil
}

// formatMismatch returns, when the given format's parser accepts none of
// the first lines of the inputs (ingest.DetectFormat's sample) while other
// formats do, a warning naming them, to print before reading; "" when the
// format accepts some, or nothing could be sampled (stdin, empty files).
func formatMismatch(cfg ingest.Config) string {
	if cfg.Format == ingest.FormatAuto {
		return ""
	}
	cands, in, err := ingest.DetectFormat(cfg.Paths, cfg.Parse)
	if err != nil || len(cands) == 0 {
		return ""
	}
	if slices.ContainsFunc(cands, func(c parse.Candidate) bool { return c.Format == cfg.Format }) {
		return ""
	}
	return fmt.Sprintf("--format=%s accepts none of the first %d lines of %s; they are accepted by %s, or use --format=auto",
		cfg.Format, cands[0].Lines, in, parse.Hint(cands))
}

// localhostNote is the sink ingest writes to when --base-url is not given:
// at the first observation of an object under parse.DefaultBaseURL (a
// path-only request target of a CLF, NASA or WorldCup log) it says once,
// on w, what became of them and which option names the site.
type localhostNote struct {
	stream.Sink
	topic string
	w     io.Writer
	said  atomic.Bool
}

var localhostPrefix = []byte(parse.DefaultBaseURL + "/")

func (s *localhostNote) Write(ctx context.Context, msgs ...stream.Message) error {
	if !s.said.Load() {
		for i := range msgs {
			if msgs[i].Topic == s.topic && bytes.HasPrefix(msgs[i].Key, localhostPrefix) && s.said.CompareAndSwap(false, true) {
				fmt.Fprintf(s.w, "ingest: note: path-only request targets become objects %s/PATH of site %q (no base URL given): give %s_BASE_URL (--base-url), e.g. --base-url=https://www.example.org, the site the log was served from\n",
					parse.DefaultBaseURL, strings.TrimPrefix(parse.DefaultBaseURL, "http://"), envPrefix)
				break
			}
		}
	}
	return s.Sink.Write(ctx, msgs...)
}
