package ingest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/changerate/changerate/parse"
)

// Follow mode: every followed path has one reader (worker.follow). A file
// is known by its identity (device and inode), not by its name: the
// registry below makes sure that one file is read by one reader at a time,
// whatever names it has (a file rotated from a.log to a.log.1 while both
// names are followed), and that a reader taking over a file another one
// finished goes on from where that one stopped instead of reading it
// again from the start.

// fileKey is a file's identity.
type fileKey struct{ dev, ino uint64 }

// followedFile is a file seen in this run.
type followedFile struct {
	owner string   // checkpoint key of the reader reading it; "" once released
	pos   Position // where its last reader stopped (once released)
	// keep holds a released file open: its inode cannot be reused by a new
	// file while it is known here. Forgotten once the file is deleted.
	keep *os.File
}

// registry is the files of a follow run, by identity; safe for
// concurrent use.
type registry struct {
	mu    sync.Mutex
	files map[fileKey]*followedFile
}

// claim makes the reader of key the reader of file id. known reports that
// the file was read before in this run, pos where; ok false means that
// another reader reads it now.
func (g *registry) claim(key string, id fileKey) (pos Position, known, ok bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.files == nil {
		g.files = map[fileKey]*followedFile{}
	}
	f := g.files[id]
	if f == nil {
		g.files[id] = &followedFile{owner: key}
		return Position{}, false, true
	}
	if f.owner != "" && f.owner != key {
		return Position{}, true, false
	}
	f.owner = key
	if f.keep != nil {
		f.keep.Close()
		f.keep = nil
	}
	return f.pos, f.pos.Offset > 0 || f.pos.Lines > 0, true
}

// busy reports whether a reader other than that of key reads file id.
func (g *registry) busy(key string, id fileKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	f := g.files[id]
	return f != nil && f.owner != "" && f.owner != key
}

// seen reports whether file id was claimed in this run.
func (g *registry) seen(id fileKey) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.files[id] != nil
}

// release records where the reader of file id stopped and takes over f,
// the reader's open file (nil: none).
func (g *registry) release(id fileKey, pos Position, f *os.File) {
	g.mu.Lock()
	defer g.mu.Unlock()
	e := g.files[id]
	if e == nil {
		e = &followedFile{}
		g.files[id] = e
	}
	e.owner, e.pos = "", pos
	if e.keep != nil {
		e.keep.Close()
	}
	e.keep = f
}

// prune forgets the released files that were deleted (no name can lead to
// them any more) and closes them.
func (g *registry) prune() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for id, f := range g.files {
		if f.owner != "" || f.keep == nil {
			continue
		}
		if fi, err := f.keep.Stat(); err == nil && fileLinks(fi) == 0 {
			f.keep.Close()
			delete(g.files, id)
		}
	}
}

// close closes every file held.
func (g *registry) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, f := range g.files {
		if f.keep != nil {
			f.keep.Close()
			f.keep = nil
		}
	}
}

// rescanInterval is how often, following, the paths are expanded again
// (new files in the followed directories, new matches of the globs).
func (r *runner) rescanInterval() time.Duration {
	return 4 * r.cfg.PollInterval
}

// followAll reads inputs, and every file that appears later in the
// directories and globs of r.cfg.Paths, until ctx is done or a reader
// fails (fatal). sum gets one InputSummary per file followed.
func (r *runner) followAll(ctx context.Context, inputs []string, sum *Summary) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		fatal error
	)
	defer r.files.close()
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	started := map[string]bool{}
	start := func(in string, found bool) {
		k := in
		if a, err := filepath.Abs(in); err == nil && in != "-" {
			k = a
		}
		if started[k] {
			return
		}
		started[k] = true
		if found {
			r.log.Info("ingest: following a new file", "input", in)
		}
		mu.Lock()
		i := len(sum.Inputs)
		sum.Inputs = append(sum.Inputs, InputSummary{Name: in})
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := r.newWorker()
			s := InputSummary{Name: in}
			if err == nil {
				s, err = w.input(cctx, in)
			}
			mu.Lock()
			sum.Inputs[i] = s
			if err != nil && fatal == nil {
				fatal = err
			}
			mu.Unlock()
			if err != nil {
				cancel(err)
			}
		}()
	}
	for _, in := range inputs {
		start(in, false)
	}
	t := time.NewTicker(r.rescanInterval())
	defer t.Stop()
loop:
	for {
		select {
		case <-cctx.Done():
			break loop
		case <-t.C:
		}
		// Each path alone: a glob that matches nothing for now is no
		// error while following.
		for _, p := range r.cfg.Paths {
			ins, err := expandPaths([]string{p})
			if err != nil {
				continue
			}
			for _, in := range ins {
				start(in, true)
			}
		}
		r.files.prune()
	}
	wg.Wait()
	return fatal
}

// follow reads the plain file name, opened as o, like tail -F until ctx is
// done: it waits at the end for more, starts again from the top of a
// truncated file, and when name comes to name another file (rotation) it
// reads the old one to its end and goes on with the new one. A file that
// another reader reads (the same file under another followed name) is not
// read: this reader waits until name names another file, or until the
// other reader is done with it and takes it over from there.
func (w *worker) follow(ctx context.Context, name, key string, o *opened) error {
	defer func() {
		if o != nil {
			o.closer()
		}
	}()
	if old := w.rotatedWhileStopped(key, name, o); old != nil {
		if start, ok := w.acquire(key, old, false); ok {
			if _, err := w.tail(ctx, name, key, old, start, true); err != nil {
				old.closer()
				return err
			}
		} else {
			old.closer()
		}
	}
	first := true
	for {
		start, ok := w.acquire(key, o, first)
		first = false
		if !ok {
			// Another name of a file another reader reads.
			alias := fileKey{o.dev, o.ino}
			o.closer()
			o = nil
			no, err := w.waitOther(ctx, name, key, alias)
			if err != nil {
				return err
			}
			o = no
			continue
		}
		no, err := w.tail(ctx, name, key, o, start, false)
		o = nil // tail closed it or handed it to the registry
		if err != nil {
			return err
		}
		o = no
	}
}

// waitOther waits until name names a file other than alias, or alias is no
// longer read by another reader, and opens it.
func (w *worker) waitOther(ctx context.Context, name, key string, alias fileKey) (*opened, error) {
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(w.r.cfg.PollInterval):
		}
		fi, err := os.Stat(name)
		if err != nil {
			continue
		}
		if id := fileKeyOf(fi); id == alias && w.r.files.busy(key, id) {
			continue
		}
		o, err := w.open(name)
		if err != nil {
			continue // gone again
		}
		return o, nil
	}
}

// acquire claims file o for the reader of key and returns where to start
// reading it: where the reader that had it in this run stopped; else its
// checkpointed position (under key, or, first, under another key: the
// file was read under another name, e.g. rotated while ingest was
// stopped); else its start. ok is false when another reader reads it.
func (w *worker) acquire(key string, o *opened, first bool) (start Position, ok bool) {
	id := fileKey{o.dev, o.ino}
	pos, known, ok := w.r.files.claim(key, id)
	if !ok {
		return Position{}, false
	}
	switch {
	case known:
		start = pos
	default:
		if p, found := w.r.cp.get(key); found && p.Dev == o.dev && p.Ino == o.ino && !p.Gzip {
			start = p
		} else if other, p, found := w.r.cp.find(o.dev, o.ino, key); first && found && !p.Gzip && sizeOf(o) >= p.Offset {
			w.r.log.Info("ingest: file was read under another name; going on from there", "input", key, "was", other, "offset", p.Offset)
			start = p
		}
	}
	start.Dev, start.Ino, start.Gzip = o.dev, o.ino, false
	return start, true
}

// rotatedWhileStopped looks, at start, for the file that the checkpoint of
// key names when name now names another one (the file was rotated while
// ingest was stopped): among the files beside name. It returns that file,
// opened, to be read to its end first; nil when there is none to read (not
// rotated, no checkpoint, read by another reader of this run, or not found:
// then the loss is logged and counted).
func (w *worker) rotatedWhileStopped(key, name string, o *opened) *opened {
	p, ok := w.r.cp.get(key)
	if !ok || p.Gzip || (p.Dev == o.dev && p.Ino == o.ino) {
		return nil
	}
	id := fileKey{p.Dev, p.Ino}
	if w.r.files.seen(id) {
		return nil
	}
	dir := filepath.Dir(name)
	ents, err := os.ReadDir(dir)
	if err == nil {
		for _, e := range ents {
			if !e.Type().IsRegular() {
				continue
			}
			path := filepath.Join(dir, e.Name())
			fi, err := os.Stat(path)
			if err != nil || fileKeyOf(fi) != id {
				continue
			}
			if fi.Size() < p.Offset {
				break // not the file that was read (its inode was reused)
			}
			old, err := w.open(path)
			if err != nil || old.gz || old.dev != p.Dev || old.ino != p.Ino {
				if err == nil {
					old.closer()
				}
				break
			}
			w.r.log.Info("ingest: followed file was rotated while ingest was stopped; reading the rest of the old one first",
				"input", name, "old", path, "offset", p.Offset)
			return old
		}
	}
	if w.r.files.seen(id) {
		return nil // found by the reader of another name meanwhile
	}
	w.r.log.Warn("ingest: followed file was rotated or deleted while ingest was stopped and the old one is not found beside it: what was written to it after the checkpointed offset is lost",
		"input", name, "lost_inode", p.Ino, "offset", p.Offset, "lines", p.Lines)
	w.r.m.lostFiles.Inc()
	return nil
}

// tail reads o, claimed by this reader, from start (see follow); it returns
// the next file name names after a rotation (o read to its end and handed
// back to the registry). finish reads o to its end, hands it back and
// returns nil.
func (w *worker) tail(ctx context.Context, name, key string, o *opened, start Position, finish bool) (*opened, error) {
	r := w.r
	done := false
	defer func() {
		if !done {
			o.closer()
		}
	}()
	if start.Offset > 0 {
		if sizeOf(o) < start.Offset {
			r.log.Warn("ingest: file shorter than its checkpoint (truncated); reading from the start", "input", name)
			start = Position{Dev: o.dev, Ino: o.ino, Epoch: start.Epoch + 1}
		} else {
			if _, err := o.f.Seek(start.Offset, io.SeekStart); err != nil {
				return nil, &inputError{err}
			}
			o.br.Reset(o.f)
			r.log.Info("ingest: resuming from checkpoint", "input", name, "offset", start.Offset, "lines", start.Lines)
		}
	}
	lr := newLineReader(o.br, r.cfg.MaxLineBytes, start.Offset)
	lineNo := start.Lines
	w.key = key
	w.setSource(key, o, start.Epoch)
	if r.cfg.Format == FormatAuto {
		start.Format = w.format
	}
	r.cp.put(key, start)
	rotated := finish
	var mark, again []byte // the bytes before the read position, to notice a truncated file written again past it
	for n := 0; ; n++ {
		if n&255 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		line, tooLong, err := lr.next(rotated)
		if err == nil {
			lineNo++
			if w.format == "" && r.cfg.Format == FormatAuto && !tooLong && len(bytes.TrimSpace(line)) > 0 {
				// The first line of a file that was empty: detect its
				// format from the complete lines it has now.
				sample := sampleLines(io.NewSectionReader(o.f, 0, max(sizeOf(o), lr.off)), SampleLines, false)
				if len(sample) == 0 {
					sample = [][]byte{append([]byte(nil), line...)}
				}
				if err := w.detect(name, sample); err != nil {
					return nil, err
				}
				if parse.IsRecordFormat(w.format) {
					return nil, &inputError{fmt.Errorf("ingest: %s looks like %s, which is read once, not followed: give it without --follow", name, w.format)}
				}
			}
			w.setPos(Position{Dev: o.dev, Ino: o.ino, Offset: lr.off, Lines: lineNo, Epoch: w.epoch})
			w.offset = lr.off
			if err := w.line(ctx, name, lineNo, line, tooLong); err != nil {
				return nil, err
			}
			continue
		}
		if err != io.EOF {
			return nil, w.readFailed(ctx, name, lineNo+1, err)
		}
		// The end of the file for now.
		if err := w.flush(ctx, true); err != nil {
			return nil, err
		}
		if rotated {
			// The old file is read to its end: hand it back (open) and
			// switch to the new one.
			r.files.release(fileKey{o.dev, o.ino}, Position{Dev: o.dev, Ino: o.ino, Offset: lr.off, Lines: lineNo, Epoch: w.epoch}, o.f)
			done = true
			if finish {
				return nil, nil
			}
			no, err := w.open(name)
			if err != nil {
				return nil, err
			}
			r.log.Info("ingest: followed file was rotated; reading the new one", "input", name)
			return no, nil
		}
		mark = readBefore(o.f, lr.off, mark)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(r.cfg.PollInterval):
		}
		fi, serr := os.Stat(name)
		cur, cerr := o.f.Stat()
		if serr == nil && cerr == nil && !os.SameFile(fi, cur) {
			rotated = true // read what is left of the old file first
			continue
		}
		if cerr != nil {
			continue
		}
		truncated := cur.Size() < lr.off+lr.partial
		if !truncated && len(mark) > 0 {
			// Truncated and written again past the read position between
			// two polls (copytruncate): the bytes before it changed.
			again = readBefore(o.f, lr.off, again)
			truncated = !bytes.Equal(mark, again)
		}
		if truncated {
			r.log.Info("ingest: followed file was truncated; reading from the start", "input", name)
			if _, err := o.f.Seek(0, io.SeekStart); err != nil {
				return nil, &inputError{err}
			}
			o.br.Reset(o.f)
			lr.reset(o.br, 0) // drops a partial line: it was of the old contents
			lineNo = 0
			w.setSource(key, o, w.epoch+1)
			mark = mark[:0]
		}
	}
}

// markBytes is how many bytes before the read position a follower compares
// between two polls.
const markBytes = 64

// readBefore reads the markBytes bytes before off into buf.
func readBefore(f *os.File, off int64, buf []byte) []byte {
	n := min(off, markBytes)
	if int64(cap(buf)) < n {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	m, _ := f.ReadAt(buf, off-n)
	return buf[:m]
}

func sizeOf(o *opened) int64 {
	fi, err := o.f.Stat()
	if err != nil {
		return 0
	}
	return fi.Size()
}

func fileKeyOf(fi os.FileInfo) fileKey {
	dev, ino := fileID(fi)
	return fileKey{dev, ino}
}
