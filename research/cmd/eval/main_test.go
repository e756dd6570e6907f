package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestCommandLineUsage: a command line that would run something other than
// what it names (an unknown -only section, an -only naming none, a
// positional argument, an empty -out) exits 2 with a message naming the
// problem and the valid sections, and writes nothing; -h lists every section
// of the table. The sections are replaced by stubs of the same names, so a
// command line that runs them (the defect) costs nothing and is reported;
// one stub more, not in the real table, shows that -h and the messages read
// the table rather than a copy of it.
func TestCommandLineUsage(t *testing.T) {
	var ran []string
	saved := sections
	t.Cleanup(func() { sections = saved })
	sections = nil
	for _, s := range append(saved, section{name: "teststub"}) {
		sections = append(sections, section{s.name, func(*Env) { ran = append(ran, s.name) }})
	}
	all := sectionNames()
	cases := []struct {
		name    string
		args    []string
		code    int
		sentry  error    // wrapped by the error, nil for none
		mention []string // on stderr
	}{
		{"unknown section", []string{"-only=bogus"}, 2, errUnknownSection, append([]string{`"bogus"`}, all...)},
		{"unknown among known", []string{"-only=cgm,nsaa,best,x"}, 2, errUnknownSection, append([]string{`"nsaa"`, `"x"`}, all...)},
		{"case matters", []string{"-only=CGM"}, 2, errUnknownSection, []string{`"CGM"`}},
		{"only commas", []string{"-only=,"}, 2, errNoSection, all},
		{"explicitly empty", []string{"-only="}, 2, errNoSection, all},
		{"blank", []string{"-only= "}, 2, errNoSection, all},
		{"positional section", []string{"cgm"}, 2, errArgs, []string{"-only=cgm"}},
		{"empty out", []string{"-out="}, 2, errNoOut, nil},
		{"unknown flag", []string{"-sections=cgm"}, 2, nil, []string{"-sections"}},
		{"help", []string{"-h"}, 0, nil, append([]string{"sections (in report order): " + strings.Join(all, ", ")}, all...)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "eval")
			args := append([]string{"-out=" + out, "-data=" + t.TempDir()}, tc.args...)
			ran = nil
			var stderr bytes.Buffer
			if code := runMain(args, &stderr); code != tc.code {
				t.Errorf("exit status %d, want %d; stderr:\n%s", code, tc.code, stderr.String())
			}
			for _, m := range tc.mention {
				if !strings.Contains(stderr.String(), m) {
					t.Errorf("stderr does not name %s:\n%s", m, stderr.String())
				}
			}
			if len(ran) > 0 {
				t.Errorf("ran sections %v", ran)
			}
			if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("%s was created (stat: %v)", out, err)
			}
			if tc.sentry != nil {
				_, err := parseArgs(args, &bytes.Buffer{})
				var ue usageError
				if !errors.As(err, &ue) || !errors.Is(err, tc.sentry) {
					t.Errorf("parseArgs error %v: want a usageError wrapping %v", err, tc.sentry)
				}
			}
		})
	}
}

// TestOnlySelectsSections: valid -only lists select their sections in
// report order, once each; without -only every section runs.
func TestOnlySelectsSections(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"default", nil, sectionNames()},
		{"one", []string{"-only=nasa"}, []string{"nasa"}},
		{"report order, blanks and repeats", []string{"-only= best ,cgm,,cgm"}, []string{"cgm", "best"}},
		{"every name", []string{"-only=" + strings.Join(sectionNames(), ",")}, sectionNames()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o, err := parseArgs(tc.args, &bytes.Buffer{})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range o.sections {
				got = append(got, s.name)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("sections %v, want %v", got, tc.want)
			}
		})
	}
}
