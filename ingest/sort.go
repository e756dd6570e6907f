package ingest

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/changerate/changerate/internal/extsort"
	"github.com/changerate/changerate/records"
	"github.com/changerate/changerate/stream"
)

// SortKey appends to dst a sort record of the observation o encoded as
// line: a key of its event time (8 bytes, big-endian, sign bit flipped so
// that bytes order like times), object, source, offset (8 bytes, numeric
// order) and content (o without its source position), then line. Records
// compared with CompareSortRecords order by key, then line: an order that
// is a function of the set of lines alone (not of their input order), in
// which observations of one object at one time keep the order of their
// source (the aggregator's duplicate detection relies on it).
func SortKey(dst []byte, o *records.Observation, line []byte) []byte {
	start := len(dst)
	dst = append(dst, 0, 0, 0, 0) // key length, set below
	dst = binary.BigEndian.AppendUint64(dst, uint64(o.Time.UnixMilli())^(1<<63))
	dst = append(dst, o.Object...)
	dst = append(dst, 0)
	dst = append(dst, o.Source...)
	dst = append(dst, 0)
	dst = binary.BigEndian.AppendUint64(dst, uint64(o.Offset)^(1<<63))
	src, off := o.Source, o.Offset
	o.Source, o.Offset = "", 0
	// An observation that reached the sort was encodable when it was
	// emitted (worker.emit dead-letters any other), so ok is true here.
	dst, _ = records.AppendObservationJSON(dst, o)
	o.Source, o.Offset = src, off
	binary.BigEndian.PutUint32(dst[start:], uint32(len(dst)-start-4))
	return append(dst, line...)
}

// CompareSortRecords orders records made by SortKey.
func CompareSortRecords(a, b []byte) int {
	ka, kb := a[4:4+binary.BigEndian.Uint32(a)], b[4:4+binary.BigEndian.Uint32(b)]
	if c := bytes.Compare(ka, kb); c != 0 {
		return c
	}
	return bytes.Compare(SortRecordLine(a), SortRecordLine(b))
}

// SortRecordLine returns the line of a record made by SortKey.
func SortRecordLine(rec []byte) []byte { return rec[4+binary.BigEndian.Uint32(rec):] }

// SortingSink puts observations in event-time order: it holds the
// messages of one topic (the observations) written to it, and Flush
// writes them to the next sink sorted (see SortKey), in batches; messages
// of other topics (dead letters) pass through at once. Beyond a memory
// budget it spills sorted runs to a directory (package extsort). It is how
// ingest merges several files by time and reads a file written newest
// first: the observations reach the sink only when every input is read.
//
// A Write returns once the messages are held, not delivered: a caller that
// records positions after a Write (ingest's checkpoint) must not use a
// SortingSink. Not safe for concurrent use.
type SortingSink struct {
	next  stream.Sink
	topic string
	batch int
	s     *extsort.Sorter
	rec   []byte
}

// NewSortingSink returns a sink holding the messages of topic for next.
// memory is the sort's memory budget in bytes (0: extsort.DefaultMemory),
// dir the directory of its spilled runs ("": the system's), batch the
// messages per write to next (0: DefaultBatchSize).
func NewSortingSink(next stream.Sink, topic string, memory int64, dir string, batch int) *SortingSink {
	if batch <= 0 {
		batch = DefaultBatchSize
	}
	return &SortingSink{next: next, topic: topic, batch: batch, s: extsort.New(CompareSortRecords, memory, dir)}
}

// Write holds the observations of msgs and writes the others to the next
// sink. An observation that does not decode is an error (ingest encodes
// every one it writes).
func (s *SortingSink) Write(ctx context.Context, msgs ...stream.Message) error {
	var pass []stream.Message
	for i := range msgs {
		m := &msgs[i]
		if m.Topic != s.topic {
			pass = append(pass, *m)
			continue
		}
		o, err := records.DecodeObservation(m.Value)
		if err != nil {
			return fmt.Errorf("ingest: sort: %w", err)
		}
		s.rec = SortKey(s.rec[:0], &o, m.Value)
		if err := s.s.Add(s.rec); err != nil {
			return fmt.Errorf("ingest: sort: %w", err)
		}
	}
	if len(pass) > 0 {
		return s.next.Write(ctx, pass...)
	}
	return nil
}

// Held is the number of observations held; Runs the sorted runs spilled
// to disk.
func (s *SortingSink) Held() int64 { return s.s.Len() }

// Runs is the number of sorted runs spilled to disk.
func (s *SortingSink) Runs() int { return s.s.Runs() }

// Flush writes every held observation to the next sink in event-time
// order. It can be called once.
func (s *SortingSink) Flush(ctx context.Context) error {
	it := s.s.Sorted()
	out := make([]stream.Message, 0, s.batch)
	var arena []byte
	write := func() error {
		if len(out) == 0 {
			return nil
		}
		err := s.next.Write(ctx, out...)
		out, arena = out[:0], arena[:0]
		return err
	}
	for r, ok := it.Next(); ok; r, ok = it.Next() {
		line := SortRecordLine(r)
		klen := binary.BigEndian.Uint32(r)
		key := r[4+8 : 4+klen]
		key = key[:bytes.IndexByte(key, 0)] // the object
		if cap(arena)-len(arena) < len(key)+len(line) && len(out) > 0 {
			// Keep earlier slices valid: start a new arena.
			arena = make([]byte, 0, max(1<<20, len(key)+len(line)))
		}
		ks := len(arena)
		arena = append(arena, key...)
		vs := len(arena)
		arena = append(arena, line...)
		out = append(out, stream.Message{Topic: s.topic, Key: arena[ks:vs:vs], Value: arena[vs:len(arena):len(arena)]})
		if len(out) >= s.batch {
			if err := write(); err != nil {
				return fmt.Errorf("ingest: write sorted observations: %w", err)
			}
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("ingest: sort: %w", err)
	}
	if err := write(); err != nil {
		return fmt.Errorf("ingest: write sorted observations: %w", err)
	}
	return nil
}

// Close releases the spilled runs; it does not close the next sink.
func (s *SortingSink) Close() error { return s.s.Close() }
