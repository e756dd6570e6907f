package cliconfig

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"strings"
	"testing"
	"time"
)

type spec struct {
	Size  int           `envconfig:"BATCH_SIZE" default:"10" desc:"batch size"`
	Wait  time.Duration `envconfig:"WAIT" default:"1s" desc:"wait"`
	Name  string        `envconfig:"NAME" desc:"name"`
	Debug bool          `envconfig:"DEBUG" desc:"debug"`
	Hosts []string      `envconfig:"HOSTS" desc:"hosts"`
	Bytes sizeValue     `envconfig:"SIZE" desc:"size"`
}

// sizeValue has its own decoder, as the commands' byte sizes do.
type sizeValue int64

func (v *sizeValue) Decode(s string) error {
	if s != "1KB" {
		return errors.New("want a size such as 1KB")
	}
	*v = 1000
	return nil
}

func load(t *testing.T, args ...string) (spec, []string, error) {
	t.Helper()
	var s spec
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	rest, err := Load("T", &s, fs, args)
	return s, rest, err
}

func TestLoad(t *testing.T) {
	cases := []struct {
		name    string
		env     map[string]string
		args    []string
		want    spec
		rest    []string
		errWith []string
	}{
		{"defaults", nil, nil, spec{Size: 10, Wait: time.Second}, []string{}, nil},
		{"environment", map[string]string{"T_BATCH_SIZE": "5", "T_HOSTS": "a,b"}, nil,
			spec{Size: 5, Wait: time.Second, Hosts: []string{"a", "b"}}, []string{}, nil},
		{"flags win and positional arguments remain", map[string]string{"T_BATCH_SIZE": "5"},
			[]string{"--batch-size=7", "--debug", "--wait", "2m", "f1", "f2"},
			spec{Size: 7, Wait: 2 * time.Minute, Debug: true}, []string{"f1", "f2"}, nil},
		{"flags after positional arguments", nil,
			[]string{"f1", "--batch-size=7", "-", "--debug", "f2"},
			spec{Size: 7, Wait: time.Second, Debug: true}, []string{"f1", "-", "f2"}, nil},
		{"double dash ends the flags", nil,
			[]string{"f1", "--", "--batch-size=7"},
			spec{Size: 10, Wait: time.Second}, []string{"f1", "--batch-size=7"}, nil},
		{"bad variable is named with its flag", map[string]string{"T_WAIT": "later"}, nil, spec{}, nil,
			[]string{"T_WAIT (--wait)", `"later"`, "from the environment", "a duration such as"}},
		{"bad flag is named with its variable", nil, []string{"--batch-size=x"}, spec{}, nil,
			[]string{"T_BATCH_SIZE (--batch-size)", `"x"`, "from the flag", "a whole number"}},
		{"bad boolean", map[string]string{"T_DEBUG": "maybe"}, nil, spec{}, nil,
			[]string{"T_DEBUG (--debug)", `"maybe"`, "true or false"}},
		{"bad boolean flag", nil, []string{"--debug=maybe"}, spec{}, nil,
			[]string{"T_DEBUG (--debug)", `"maybe"`, "from the flag", "true or false"}},
		{"own decoder's message kept", map[string]string{"T_SIZE": "12QB"}, nil, spec{}, nil,
			[]string{"T_SIZE (--size)", `"12QB"`, "not a valid value: want a size"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for k, v := range c.env {
				t.Setenv(k, v)
			}
			got, rest, err := load(t, c.args...)
			if c.errWith != nil {
				if err == nil {
					t.Fatal("no error")
				}
				for _, w := range c.errWith {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Size != c.want.Size || got.Wait != c.want.Wait || got.Debug != c.want.Debug ||
				strings.Join(got.Hosts, ",") != strings.Join(c.want.Hosts, ",") || strings.Join(rest, " ") != strings.Join(c.rest, " ") {
				t.Errorf("got %+v %v, want %+v %v", got, rest, c.want, c.rest)
			}
		})
	}
	// Go's names of types and parsers never reach the user.
	for _, bad := range [][]string{{"--batch-size=x"}, {"--wait=later"}, {"--debug=maybe"}, {"--size=2"}} {
		_, _, err := load(t, bad...)
		if err == nil {
			t.Fatalf("%v: no error", bad)
		}
		for _, internal := range []string{"strconv", "time.Duration", "ParseInt", "ParseBool", "cliconfig.", "sizeValue", "invalid syntax"} {
			if strings.Contains(err.Error(), internal) {
				t.Errorf("%v: error %q shows Go's %q", bad, err, internal)
			}
		}
	}
	// Flags do not leak into the environment of later loads.
	if _, ok := os.LookupEnv("T_BATCH_SIZE"); ok {
		t.Error("a flag value stayed in the environment")
	}
}

func TestWriteReference(t *testing.T) {
	var b bytes.Buffer
	if err := WriteReference(&b, "T", &spec{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| `T_BATCH_SIZE` | `--batch-size` | `10` | — | batch size |", "| `T_WAIT` | `--wait` | `1s` | duration | wait |", "| `T_NAME` | `--name` | `—` | — | name |"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("reference lacks %q:\n%s", want, b.String())
		}
	}
}
