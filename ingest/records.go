package ingest

import (
	"context"
	"fmt"
)

// readRecords reads a record format (WARC).
func (w *worker) readRecords(ctx context.Context, name string) error {
	return &inputError{fmt.Errorf("format %s: not implemented yet", w.r.cfg.Format)}
}
