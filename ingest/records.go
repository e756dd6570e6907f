package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/changerate/changerate/parse"
)

// readRecords reads a record format (WARC). Positions count records: a
// checkpointed input is resumed by reading and dropping the records before
// the checkpoint. Follow mode does not apply.
func (w *worker) readRecords(ctx context.Context, name, key string, o *opened) error {
	rr, err := w.recordReader(name, o)
	if err != nil {
		return fmt.Errorf("ingest: %w", err)
	}
	w.setStatSource(rr)
	defer w.setStatSource(nil)
	var start Position
	if name != "-" {
		if p, ok := w.r.cp.get(key); ok && p.Dev == o.dev && p.Ino == o.ino {
			start = p
		}
	}
	prefix := name
	if name == "-" {
		prefix = "stdin"
	}
	for rr.Records() < start.Lines {
		if _, err := rr.Next(&w.obs); err == io.EOF {
			w.r.log.Warn("ingest: input has fewer records than its checkpoint; nothing to read", "input", name)
			return nil
		} else if err != nil && !isParseError(err) {
			return &inputError{fmt.Errorf("skip to checkpoint record %d: %w", start.Lines, err)}
		}
	}
	w.key = key
	w.setSource(key, o, 0)
	for n := 0; ; n++ {
		if n&63 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		input, err := rr.Next(&w.obs)
		if err == io.EOF {
			return nil
		}
		if err != nil && !isParseError(err) {
			return w.readFailed(ctx, prefix, rr.Records()+1, err)
		}
		rec := rr.Records()
		w.setPos(Position{Dev: o.dev, Ino: o.ino, Offset: rec, Gzip: o.gz, Lines: rec})
		w.offset = rec
		w.cur.lines++
		w.cur.bytes += int64(len(input))
		w.sum.Lines++
		w.linePrefix, w.lineNo = prefix, rec
		if err == nil {
			if err := w.emit(ctx); err != nil {
				return err
			}
			continue
		}
		reason := parse.Reason(err)
		if parse.IsSkip(err) {
			w.sum.Skipped[reason]++
			w.r.m.skipped.WithLabelValues(w.label(), reason).Inc()
			continue
		}
		if err := w.deadLetter(ctx, prefix, rec, reason, err, input); err != nil {
			return err
		}
	}
}

func isParseError(err error) bool {
	var pe *parse.Error
	return errors.As(err, &pe)
}
