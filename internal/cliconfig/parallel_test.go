package cliconfig

import (
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestLoadParallel: loads with different flags run at once (go test -race)
// each get their own values, and none of them changes the process
// environment.
func TestLoadParallel(t *testing.T) {
	before := os.Environ()
	slices.Sort(before)
	t.Run("group", func(t *testing.T) {
		for i := range 8 {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				args := []string{fmt.Sprintf("--batch-size=%d", 100+i), fmt.Sprintf("--wait=%ds", i+1), "--name=n" + fmt.Sprint(i), "file" + fmt.Sprint(i)}
				if i%2 == 0 {
					args = append(args, "--debug", "--hosts=a,b")
				}
				for range 50 {
					var s spec
					fs := flag.NewFlagSet("x", flag.ContinueOnError)
					fs.SetOutput(io.Discard)
					rest, err := Load("T", &s, fs, args)
					if err != nil {
						t.Fatal(err)
					}
					if s.Size != 100+i || s.Wait != time.Duration(i+1)*time.Second || s.Name != "n"+fmt.Sprint(i) ||
						s.Debug != (i%2 == 0) || (i%2 == 0) != (strings.Join(s.Hosts, ",") == "a,b") ||
						strings.Join(rest, " ") != "file"+fmt.Sprint(i) {
						t.Fatalf("load %d got %+v %v", i, s, rest)
					}
					if _, ok := os.LookupEnv("T_BATCH_SIZE"); ok {
						t.Fatal("T_BATCH_SIZE is in the environment while loading")
					}
				}
			})
		}
	})
	after := os.Environ()
	slices.Sort(after)
	if !slices.Equal(before, after) {
		t.Errorf("the environment changed:\nbefore %q\nafter  %q", before, after)
	}
}

// TestLoadFrom: the environment is read through the lookup given, and
// flags win over it.
func TestLoadFrom(t *testing.T) {
	env := map[string]string{"T_BATCH_SIZE": "5", "T_WAIT": "3s", "NAME": "unprefixed"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var s spec
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	if _, err := LoadFrom(lookup, "T", &s, fs, []string{"--wait=4s"}); err != nil {
		t.Fatal(err)
	}
	if s.Size != 5 || s.Wait != 4*time.Second || s.Name != "unprefixed" {
		t.Errorf("got %+v, want size 5 (environment), wait 4s (flag), name from NAME", s)
	}
}

// group is an option group: an embedded struct whose fields without a
// default tag take their defaults from the values set before Load.
type group struct {
	Addr    string        `envconfig:"ADDR" desc:"address"`
	Timeout time.Duration `envconfig:"TIMEOUT" desc:"timeout"`
	Retries int           `envconfig:"RETRIES" default:"3" desc:"retries"`
}

type withGroup struct {
	First string `envconfig:"FIRST" desc:"first"`
	group
	Last []string `envconfig:"LAST" desc:"last"`
}

func TestGroups(t *testing.T) {
	spec := withGroup{group: group{Addr: ":80", Timeout: 30 * time.Second}, Last: []string{"a", "b"}}
	var got []string
	for _, o := range Options("T", &spec) {
		got = append(got, o.Env+"="+o.Default)
	}
	if want := []string{"T_FIRST=", "T_ADDR=:80", "T_TIMEOUT=30s", "T_RETRIES=3", "T_LAST=a,b"}; !slices.Equal(got, want) {
		t.Errorf("Options = %q, want %q", got, want)
	}
	for _, tc := range []struct {
		args []string
		want withGroup
	}{
		{nil, withGroup{group: group{Addr: ":80", Timeout: 30 * time.Second, Retries: 3}, Last: []string{"a", "b"}}},
		{[]string{"--timeout=1m", "--addr=", "--last=c"}, withGroup{group: group{Timeout: time.Minute, Retries: 3}, Last: []string{"c"}}},
	} {
		s := spec
		fs := flag.NewFlagSet("x", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		if _, err := LoadFrom(func(string) (string, bool) { return "", false }, "T", &s, fs, tc.args); err != nil {
			t.Fatal(err)
		}
		if s.First != tc.want.First || s.group != tc.want.group || !slices.Equal(s.Last, tc.want.Last) {
			t.Errorf("%v: got %+v, want %+v", tc.args, s, tc.want)
		}
	}
}

// TestLoadListsEveryProblem: all bad values are reported at once.
func TestLoadListsEveryProblem(t *testing.T) {
	env := map[string]string{"T_WAIT": "later"}
	var s spec
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := LoadFrom(func(k string) (string, bool) { v, ok := env[k]; return v, ok }, "T", &s, fs, []string{"--batch-size=x", "--debug=maybe"})
	if err == nil {
		t.Fatal("no error")
	}
	for _, w := range []string{"T_WAIT (--wait)", "T_BATCH_SIZE (--batch-size)", "T_DEBUG (--debug)"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q lacks %q", err, w)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		time.Hour: "1h", 720 * time.Hour: "720h", 10 * time.Minute: "10m", 90 * time.Minute: "1h30m",
		30 * time.Second: "30s", 5 * time.Millisecond: "5ms", 61 * time.Second: "1m1s",
	} {
		v := reflect.ValueOf(&d).Elem()
		if got := format(v); got != want {
			t.Errorf("format(%v) = %q, want %q", d, got, want)
		}
		var back time.Duration
		if err := decode(want, reflect.ValueOf(&back).Elem()); err != nil || back != d {
			t.Errorf("decode(%q) = %v, %v", want, back, err)
		}
	}
}
