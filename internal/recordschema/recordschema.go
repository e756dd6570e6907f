// Package recordschema validates encoded records against their JSON Schemas
// (api/records), so that the tests of every package that writes records
// can check what they produce against what docs/records.md and the schemas
// promise.
package recordschema

import (
	"bytes"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/changerate/changerate/api"
)

// The record types, by schema file name.
const (
	Observation  = "observation"
	Estimate     = "estimate"
	AccessReport = "access-report"
	Alert        = "alert"
	DeadLetter   = "dead-letter"
)

const base = "https://changerate.dev/records/"

var (
	once    sync.Once
	schemas map[string]*jsonschema.Schema
	loadErr error
)

func load() {
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	names, err := fs.Glob(api.Records, "records/*.schema.json")
	if err != nil {
		loadErr = err
		return
	}
	for _, n := range names {
		b, err := fs.ReadFile(api.Records, n)
		if err != nil {
			loadErr = err
			return
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			loadErr = fmt.Errorf("recordschema: %s: %w", n, err)
			return
		}
		if err := c.AddResource(base+path.Base(n), doc); err != nil {
			loadErr = fmt.Errorf("recordschema: %s: %w", n, err)
			return
		}
	}
	schemas = map[string]*jsonschema.Schema{}
	for _, n := range names {
		kind := strings.TrimSuffix(path.Base(n), ".schema.json")
		if kind == "defs" {
			continue
		}
		s, err := c.Compile(base + path.Base(n))
		if err != nil {
			loadErr = fmt.Errorf("recordschema: %s: %w", n, err)
			return
		}
		schemas[kind] = s
	}
}

// Validate checks one encoded record of the given type against its schema.
func Validate(kind string, record []byte) error {
	once.Do(load)
	if loadErr != nil {
		return loadErr
	}
	s, ok := schemas[kind]
	if !ok {
		return fmt.Errorf("recordschema: no schema for record type %q", kind)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(record))
	if err != nil {
		return fmt.Errorf("recordschema: %s record is not JSON: %w", kind, err)
	}
	if err := s.Validate(v); err != nil {
		return fmt.Errorf("recordschema: %s record %s: %w", kind, record, err)
	}
	return nil
}

// ForTopic is the record type written to a topic of the default names
// (observations, estimates, access-reports, alerts, dead-letter, late), and
// false for any other topic.
func ForTopic(topic string) (string, bool) {
	switch topic {
	case "observations":
		return Observation, true
	case "estimates":
		return Estimate, true
	case "access-reports":
		return AccessReport, true
	case "alerts":
		return Alert, true
	case "dead-letter", "late":
		return DeadLetter, true
	}
	return "", false
}

// Check fails t when record does not validate as kind.
func Check(t testing.TB, kind string, record []byte) {
	t.Helper()
	if err := Validate(kind, record); err != nil {
		t.Error(err)
	}
}
