package cliconfig

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

type secretSpec struct {
	User     string `envconfig:"USER" desc:"user"`
	Password string `envconfig:"PASSWORD" file:"true" desc:"password"`
}

func TestSecretFromFile(t *testing.T) {
	dir := t.TempDir()
	pw := filepath.Join(dir, "password")
	if err := os.WriteFile(pw, []byte("s3cret:with spaces\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	crlf := filepath.Join(dir, "crlf")
	if err := os.WriteFile(crlf, []byte("dos\r\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    string
		errWith []string
	}{
		{"variable", map[string]string{"T_PASSWORD": "direct"}, nil, "direct", nil},
		{"file from the environment", map[string]string{"T_PASSWORD_FILE": pw}, nil, "s3cret:with spaces", nil},
		{"file from a flag", nil, []string{"--password-file=" + crlf}, "dos", nil},
		{"flag file wins over nothing else", map[string]string{"T_USER": "u"}, []string{"--password-file", pw}, "s3cret:with spaces", nil},
		{"both", map[string]string{"T_PASSWORD": "x", "T_PASSWORD_FILE": pw}, nil, "", []string{"T_PASSWORD", "T_PASSWORD_FILE", "both"}},
		{"missing file", map[string]string{"T_PASSWORD_FILE": filepath.Join(dir, "nope")}, nil, "", []string{"T_PASSWORD_FILE", "no such file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			var s secretSpec
			fs := flag.NewFlagSet("x", flag.ContinueOnError)
			fs.SetOutput(io.Discard)
			_, err := Load("T", &s, fs, tc.args)
			if tc.errWith != nil {
				if err == nil {
					t.Fatalf("no error, want one naming %v", tc.errWith)
				}
				for _, w := range tc.errWith {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Password != tc.want {
				t.Errorf("Password = %q, want %q", s.Password, tc.want)
			}
			if _, set := os.LookupEnv("T_PASSWORD"); set && tc.env["T_PASSWORD"] == "" {
				t.Error("the secret was left in the environment")
			}
		})
	}
	opts := Options("T", &secretSpec{})
	if len(opts) != 3 || opts[2].Env != "T_PASSWORD_FILE" || opts[2].Flag != "password-file" || opts[2].FileOf != "T_PASSWORD" {
		t.Errorf("Options = %+v, want USER, PASSWORD, PASSWORD_FILE", opts)
	}
}
