package ingest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Position is where reading of one input stopped: the file's identity and
// the offset just after the last acknowledged line (bytes of decompressed
// data for line formats, records for WARC).
type Position struct {
	Dev    uint64 `json:"dev"`
	Ino    uint64 `json:"ino"`
	Offset int64  `json:"offset"`
	// Gzip is true when Offset counts decompressed bytes of a gzip file.
	Gzip bool `json:"gzip,omitempty"`
	// Lines is the number of lines (records) read up to Offset.
	Lines int64 `json:"lines"`
	// Epoch counts truncations of a followed file (same inode, read again
	// from the start); it is part of the observations' Source.
	Epoch int64 `json:"epoch,omitempty"`
	// Format is the input's format when the checkpoint's is FormatAuto
	// (detected once: a resumed input keeps it).
	Format string `json:"format,omitempty"`
}

type checkpointFile struct {
	Version int                 `json:"version"`
	Format  string              `json:"format"`
	Inputs  map[string]Position `json:"inputs"`
}

// checkpoint is the in-memory checkpoint; safe for concurrent use.
type checkpoint struct {
	path   string
	format string
	mu     sync.Mutex
	pos    map[string]Position
	dirty  bool      // pos changed since the last save
	saved  time.Time // time of the last save
}

func loadCheckpoint(path, format string) (*checkpoint, error) {
	c := &checkpoint{path: path, format: format, pos: map[string]Position{}}
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ingest: read checkpoint: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("ingest: checkpoint %s is corrupt: %w", path, err)
	}
	if f.Version != 1 {
		return nil, fmt.Errorf("ingest: checkpoint %s has version %d, want 1", path, f.Version)
	}
	if f.Format != format {
		return nil, fmt.Errorf("ingest: checkpoint %s is for format %q, not %q", path, f.Format, format)
	}
	for k, v := range f.Inputs {
		c.pos[k] = v
	}
	return c, nil
}

func (c *checkpoint) get(key string) (Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pos[key]
	return p, ok
}

// find returns a position of the file dev/ino recorded under a key other
// than except (the file was read under another name).
func (c *checkpoint) find(dev, ino uint64, except string) (string, Position, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, p := range c.pos {
		if k != except && p.Dev == dev && p.Ino == ino && (dev != 0 || ino != 0) {
			return k, p, true
		}
	}
	return "", Position{}, false
}

// put records a position in memory.
func (c *checkpoint) put(key string, p Position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pos[key] = p
	c.dirty = true
}

// save writes the checkpoint file atomically (temporary file, fsync,
// rename) if a position changed since the last save and, unless force,
// at least interval passed since then. It reports whether it wrote.
func (c *checkpoint) save(force bool, interval time.Duration) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.path == "" || !c.dirty || (!force && time.Since(c.saved) < interval) {
		return false, nil
	}
	b, err := json.Marshal(checkpointFile{Version: 1, Format: c.format, Inputs: c.pos})
	if err != nil {
		return false, fmt.Errorf("ingest: encode checkpoint: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(c.path), filepath.Base(c.path)+".tmp*")
	if err != nil {
		return false, fmt.Errorf("ingest: write checkpoint: %w", err)
	}
	_, werr := tmp.Write(b)
	serr := tmp.Sync()
	cerr := tmp.Close()
	if err := errors.Join(werr, serr, cerr); err != nil {
		os.Remove(tmp.Name())
		return false, fmt.Errorf("ingest: write checkpoint: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.path); err != nil {
		os.Remove(tmp.Name())
		return false, fmt.Errorf("ingest: write checkpoint: %w", err)
	}
	c.dirty = false
	c.saved = time.Now()
	return true, nil
}
