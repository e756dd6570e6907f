package cliconfig

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// lib is a library configuration that declared options set.
type lib struct {
	Batch  int
	Bytes  int64
	Wait   time.Duration
	Inner  struct{ Seconds float64 }
	Mode   string
	Chance float64
}

// declared are options with every tag of declare.go.
type declared struct {
	Batch  int           `envconfig:"BATCH" unit:"messages" valid:">=1" to:"lib:Batch" desc:"batch"`
	Bytes  ByteSize      `envconfig:"BYTES" valid:">=0" to:"lib:Bytes" desc:"bytes"`
	Wait   time.Duration `envconfig:"WAIT" valid:">=1s" to:"lib:Wait,lib:Inner.Seconds" desc:"wait"`
	Mode   string        `envconfig:"MODE" default:"b" valid:"a|b|c" to:"lib:Mode" desc:"mode"`
	Chance float64       `envconfig:"CHANCE" unit:"probability" valid:">0 <1" to:"lib:Chance,other:X" desc:"chance"`
	Own    int           `envconfig:"OWN" default:"3" desc:"the command's own"`
}

// TestDefaultsApply: the library's defaults become the options' (a
// default tag wins), and Apply writes the options into the library's
// configuration, converting a ByteSize to int64 and a duration to float64
// seconds; a target the command does not name is skipped.
func TestDefaultsApply(t *testing.T) {
	def := lib{Batch: 100, Bytes: 2048, Wait: 2 * time.Second, Mode: "a", Chance: 0.5}
	var d declared
	Defaults(&d, Targets{"lib": &def})
	if want := (declared{Batch: 100, Bytes: 2048, Wait: 2 * time.Second, Chance: 0.5}); d != want {
		t.Errorf("Defaults = %+v, want %+v", d, want)
	}
	d.Mode, d.Bytes, d.Wait = "c", 0, 1500*time.Millisecond
	var got lib
	Apply(&d, Targets{"lib": &got})
	want := lib{Batch: 100, Bytes: 0, Wait: 1500 * time.Millisecond, Mode: "c", Chance: 0.5}
	want.Inner.Seconds = 1.5
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Apply = %+v, want %+v", got, want)
	}
}

// TestCheck: every value outside its valid tag is reported at once, named
// with its variable and flag, in its unit.
func TestCheck(t *testing.T) {
	ok := declared{Batch: 1, Wait: time.Second, Mode: "", Chance: 0.5}
	if err := Check("T", &ok); err == nil || !strings.Contains(err.Error(), `T_MODE (--mode) must be a, b or c, got ""`) {
		t.Errorf("Check(empty mode) = %v", err)
	}
	ok.Mode = "b"
	if err := Check("T", &ok); err != nil {
		t.Errorf("Check(valid) = %v", err)
	}
	bad := declared{Batch: 0, Bytes: -1, Wait: 500 * time.Millisecond, Mode: "d", Chance: 1}
	err := Check("T", &bad)
	for _, w := range []string{
		"T_BATCH (--batch) must be at least 1 (messages), got 0",
		"T_BYTES (--bytes) must be at least 0, got -1",
		"T_WAIT (--wait) must be at least 1s, got 500ms",
		`T_MODE (--mode) must be a, b or c, got "d"`,
		"T_CHANCE (--chance) must be more than 0 and less than 1 (probability), got 1",
	} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Check = %v\nlacks %q", err, w)
		}
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 5 {
		t.Errorf("Check's error is not the list of the five problems: %v", err)
	}
}

// TestDeclarationErrorsPanic: a to tag that names no field is a
// programming error, found at the first use.
func TestDeclarationErrorsPanic(t *testing.T) {
	type wrong struct {
		X int `envconfig:"X" to:"lib:Nope"`
	}
	defer func() {
		if r := recover(); r == nil || !strings.Contains(r.(string), "has no field Nope") {
			t.Errorf("recover() = %v", r)
		}
	}()
	Defaults(&wrong{}, Targets{"lib": &lib{}})
}
