// Package cliconfig gives the commands one way to read their configuration:
// environment variables and command-line flags derived from the same
// struct, so every option has both and both are documented in one place
// (the struct's tags). It is used only by packages under cmd/ and
// internal/options: library packages never read the environment.
//
// A field tagged `envconfig:"BATCH_SIZE" default:"2000" desc:"..."` (the
// tag syntax of kelseyhightower/envconfig) in a struct loaded with prefix
// "CHANGERATE" is read from the flag --batch-size, else from
// CHANGERATE_BATCH_SIZE, else from the default tag. Unlike envconfig, the
// name without the prefix (BATCH_SIZE) is not read: generic names such as
// OUT, IN, FORMAT or LOG_LEVEL set for another program must not configure
// this one. A field with
// neither a value nor a default tag keeps the value it had before Load,
// and that value is its documented default: this is how option groups
// shared by several commands (internal/options) take defaults from the
// library they configure, or per command. Anonymous (embedded) struct
// fields without an envconfig tag are groups: their fields are options
// with the same prefix, listed where the group is embedded.
//
// Beyond envconfig's tags, unit, valid and to declare what a number
// counts, its bounds and the library field the option sets (declare.go),
// so that an option is written once: Check, Defaults and Apply read them.
//
// Load never modifies the process environment, so concurrent loads (for
// example parallel tests) are independent. This is why values are decoded
// here (decode.go, following kelseyhightower/envconfig's documented rules
// and its Decoder interface) rather than by envconfig.Process: envconfig
// reads only os.LookupEnv, so letting a flag win through it means writing
// the flag into the process environment first. Errors name the environment
// variable and the flag, say where the value came from and what is wanted,
// and list every bad value at once.
//
// A field also tagged `file:"true"` (a secret) can be read from a file
// instead: CHANGERATE_<NAME>_FILE or --<name>-file names the file, whose
// content (without a trailing newline) becomes the value. This is how
// Kubernetes Secrets mounted as files, Docker secrets and systemd
// credentials reach a program without putting the secret in its
// environment. Setting both the option and its _FILE is an error.
package cliconfig

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"text/tabwriter"
)

// Option describes one configuration option.
type Option struct {
	// Env is the environment variable, with the prefix; Flag the flag
	// name without dashes.
	Env, Flag string
	// Default is the default tag, or else the field's value before Load
	// when it is not the zero value; "" means none.
	Default string
	// Desc is the desc tag; Type the field's Go type.
	Desc, Type string
	// FileOf is, for a NAME_FILE option, the Env of the option it reads.
	FileOf string
	// Unit, Valid and To are the tags of the same names (declare.go).
	Unit, Valid string
	To          []string
	// Tag is the field's whole tag, for tags of the command's own (a
	// NAME_FILE option has its secret's).
	Tag reflect.StructTag

	name  string // the envconfig tag: Env without the prefix
	index []int  // the field, for reflect.Value.FieldByIndex
	tag   string // the default tag
}

// Options lists the options of the struct pointed to by spec, in field
// order, embedded groups in place.
func Options(prefix string, spec any) []Option {
	v := reflect.ValueOf(spec)
	if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
		panic(fmt.Sprintf("cliconfig: spec must point to a struct, got %T", spec))
	}
	return appendOptions(nil, prefix, v.Elem(), nil)
}

func appendOptions(out []Option, prefix string, v reflect.Value, index []int) []Option {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		idx := append(append([]int(nil), index...), i)
		name := f.Tag.Get("envconfig")
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct && !hasDecoder(f.Type) {
			out = appendOptions(out, prefix, v.Field(i), idx)
			continue
		}
		if name == "" || name == "-" || !f.IsExported() {
			continue
		}
		env := name
		if prefix != "" {
			env = prefix + "_" + name
		}
		flagName := flagOf(name)
		def := f.Tag.Get("default")
		if def == "" && !v.Field(i).IsZero() {
			def = format(v.Field(i))
		}
		var to []string
		if t := f.Tag.Get("to"); t != "" {
			to = strings.Split(t, ",")
		}
		out = append(out, Option{
			Env: env, Flag: flagName, Default: def, Desc: f.Tag.Get("desc"), Type: f.Type.String(),
			Unit: f.Tag.Get("unit"), Valid: f.Tag.Get("valid"), To: to, Tag: f.Tag,
			name: name, index: idx, tag: f.Tag.Get("default"),
		})
		if f.Tag.Get("file") == "true" {
			out = append(out, Option{
				Env: env + "_FILE", Flag: flagName + "-file", Type: "string", FileOf: env, Tag: f.Tag,
				Desc: "file whose content (without a trailing newline) is " + env + ", e.g. a mounted Secret; exclusive with it",
				name: name + "_FILE",
			})
		}
	}
	return out
}

// flagOf is the flag of an option name: BATCH_SIZE → batch-size.
func flagOf(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "_", "-")
}

// Name is the option's name without the prefix: BATCH_SIZE.
func (o Option) Name() string { return o.name }

// OptionName names an option by its variable and its flag, as errors
// do: OptionName("CHANGERATE", "BATCH_SIZE") is
// "CHANGERATE_BATCH_SIZE (--batch-size)".
func OptionName(prefix, name string) string {
	env := name
	if prefix != "" {
		env = prefix + "_" + name
	}
	return env + " (--" + flagOf(name) + ")"
}

// Lookup finds an environment variable, as os.LookupEnv does.
type Lookup func(key string) (string, bool)

// Load fills spec (a pointer to a struct with envconfig tags) from args,
// parsed as flags on fs (flags may follow positional arguments; "--" ends
// them), and from the process environment; flags win. It returns the
// positional arguments. It reads the environment and never changes it.
func Load(prefix string, spec any, fs *flag.FlagSet, args []string) ([]string, error) {
	return LoadFrom(os.LookupEnv, prefix, spec, fs, args)
}

// LoadFrom is Load with the environment read through lookup.
func LoadFrom(lookup Lookup, prefix string, spec any, fs *flag.FlagSet, args []string) ([]string, error) {
	opts := Options(prefix, spec)
	flags := map[string]string{} // Env → value, of the flags given
	for _, o := range opts {
		help := o.Desc
		if o.Default != "" {
			help += " (default " + strings.TrimSpace(o.Default+" "+o.Unit) + ")"
		} else if o.Unit != "" {
			help += " (" + o.Unit + ")"
		}
		help += " [env " + o.Env + "]"
		set := func(v string) error { flags[o.Env] = v; return nil }
		if o.Type == "bool" {
			fs.BoolFunc(o.Flag, help, set)
			continue
		}
		fs.Func(o.Flag, help, set)
	}
	rest, err := parseInterspersed(fs, args)
	if err != nil {
		return nil, err
	}
	type source struct {
		value string
		from  string // "the flag", "the environment" or the file's option
	}
	given := func(o Option) (source, bool) {
		if v, ok := flags[o.Env]; ok {
			return source{v, "the flag"}, true
		}
		if v, ok := lookup(o.Env); ok {
			return source{v, "the environment"}, true
		}
		return source{}, false
	}
	values := map[string]source{}
	for _, o := range opts {
		if o.FileOf != "" {
			continue
		}
		if s, ok := given(o); ok {
			values[o.Env] = s
		}
	}
	for _, o := range opts {
		if o.FileOf == "" {
			continue
		}
		path, ok := given(o)
		if !ok || path.value == "" {
			continue
		}
		if s, ok := given(Option{Env: o.FileOf}); ok && s.value != "" {
			name := strings.TrimSuffix(o.name, "_FILE")
			return nil, fmt.Errorf("config: %s and %s are both set; set one", OptionName(prefix, name), OptionName(prefix, o.name))
		}
		b, err := os.ReadFile(path.value)
		if err != nil {
			return nil, fmt.Errorf("config: %s: %w", OptionName(prefix, o.name), err)
		}
		val := strings.TrimSuffix(strings.TrimSuffix(string(b), "\n"), "\r")
		values[o.FileOf] = source{val, "the file of " + o.Env}
	}
	root := reflect.ValueOf(spec).Elem()
	var errs []error
	for _, o := range opts {
		if o.FileOf != "" {
			continue
		}
		s, ok := values[o.Env]
		if !ok {
			if o.tag == "" {
				continue // keeps its value: the default
			}
			s = source{o.tag, "the default"}
		}
		field := root.FieldByIndex(o.index)
		if err := decode(s.value, field); err != nil {
			errs = append(errs, fmt.Errorf("config: %s = %q (from %s) is not %s", OptionName(prefix, o.name), s.value, s.from, want(field, err)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rest, nil
}

// parseInterspersed parses args on fs allowing flags after positional
// arguments, as GNU programs do ("ingest access.log --format=squid"): the
// flag package alone stops at the first positional argument and would take
// every later flag for a file name. "--" ends the flags; "-" (stdin) is a
// positional argument.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var rest []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		left := fs.Args()
		if n := len(args) - len(left); n > 0 && args[n-1] == "--" {
			return append(rest, left...), nil
		}
		if len(left) == 0 {
			return rest, nil
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// WriteReference writes a Markdown table of the options of spec, for the
// docs/configuration.md. spec holds the defaults of fields without a default tag (see
// Options).
func WriteReference(w io.Writer, prefix string, spec any) error {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', 0)
	fmt.Fprintln(tw, "| variable | flag | default | unit | meaning |")
	fmt.Fprintln(tw, "|---|---|---|---|---|")
	for _, o := range Options(prefix, spec) {
		def, unit := o.Default, o.Unit
		if def == "" {
			def = "—"
		}
		switch {
		case unit != "":
		case o.Type == durationType.String():
			unit = "duration"
		case o.Type == byteSizeType.String():
			unit = "bytes"
		default:
			unit = "—"
		}
		fmt.Fprintf(tw, "| `%s` | `--%s` | `%s` | %s | %s |\n", o.Env, o.Flag, def, unit, o.Desc)
	}
	return tw.Flush()
}
