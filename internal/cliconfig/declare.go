package cliconfig

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"
)

// An option is declared once, by its field's tags; besides the envconfig
// tags (envconfig, default, desc) a field may have:
//
//	unit:"objects"       what a number counts; documented and named in errors
//	                     (durations and byte sizes carry theirs in their values)
//	valid:">=1"          bounds, space-separated (>=, >, <=, <), each written as
//	                     the option's values are: valid:">0 <=1", valid:">=1s"
//	valid:"update|final" the values allowed (an empty alternative allows "")
//	to:"lib:Path.To.Field"
//	                     the library configuration field the option sets
//	                     (Targets), comma-separated when it sets several; the
//	                     option's default is that field's value in the
//	                     library's defaults (Defaults) unless a default tag
//	                     gives the command's own
//
// Check reports the values outside their valid tag, Defaults and Apply
// copy between the options and the libraries' configurations: a new option
// of a library is its library field and one tagged field, nothing else.

// Targets names the library configurations that options set, by the
// first part of their to tags: to:"aggregate:Model.PStale" is the field
// Model.PStale of the struct Targets["aggregate"] points to. A target
// that a command does not name is skipped: option groups shared by several
// commands may set a library configuration that only one of them has.
type Targets map[string]any

// Defaults sets every option of spec that has a to tag and no default tag
// to the value of its first target field: the library's default becomes
// the option's documented default, without being written again.
func Defaults(spec any, t Targets) {
	root := reflect.ValueOf(spec).Elem()
	for _, o := range Options("", spec) {
		if o.tag != "" || o.FileOf != "" {
			continue
		}
		for _, to := range o.To {
			dst, ok := target(t, to)
			if !ok {
				continue
			}
			assign(root.FieldByIndex(o.index), dst, o.Env)
			break
		}
	}
}

// Apply sets every target field of the options of spec to the option's
// value.
func Apply(spec any, t Targets) {
	root := reflect.ValueOf(spec).Elem()
	for _, o := range Options("", spec) {
		for _, to := range o.To {
			if dst, ok := target(t, to); ok {
				assign(dst, root.FieldByIndex(o.index), o.Env)
			}
		}
	}
}

// target finds the field "lib:Path.To.Field" of t; false if t has no lib.
// A path that does not resolve is a programming error: it panics.
func target(t Targets, to string) (reflect.Value, bool) {
	lib, path, ok := strings.Cut(to, ":")
	if !ok {
		panic(fmt.Sprintf("cliconfig: to tag %q is not lib:Path", to))
	}
	p, ok := t[lib]
	if !ok {
		return reflect.Value{}, false
	}
	v := reflect.ValueOf(p).Elem()
	for _, name := range strings.Split(path, ".") {
		if v.Kind() != reflect.Struct {
			panic(fmt.Sprintf("cliconfig: to tag %q: %s is not a struct", to, v.Type()))
		}
		f := v.FieldByName(name)
		if !f.IsValid() {
			panic(fmt.Sprintf("cliconfig: to tag %q: %s has no field %s", to, v.Type(), name))
		}
		v = f
	}
	return v, true
}

// assign sets dst to src, converting between the option's type and the
// library's: the same kinds (a ByteSize to an int64 or an int), and a
// time.Duration to or from float64 seconds.
func assign(dst, src reflect.Value, env string) {
	switch {
	case src.Type().AssignableTo(dst.Type()):
		dst.Set(src)
	case src.Type() == durationType && dst.Kind() == reflect.Float64:
		dst.SetFloat(time.Duration(src.Int()).Seconds())
	case dst.Type() == durationType && src.Kind() == reflect.Float64:
		dst.SetInt(int64(src.Float() * float64(time.Second)))
	case src.Type().ConvertibleTo(dst.Type()) && numeric(src.Kind()) == numeric(dst.Kind()) && numeric(src.Kind()) != "":
		dst.Set(src.Convert(dst.Type()))
	default:
		panic(fmt.Sprintf("cliconfig: %s: cannot set a %s from a %s", env, dst.Type(), src.Type()))
	}
}

// numeric is the family of a kind: "int", "uint", "float" or "".
func numeric(k reflect.Kind) string {
	switch {
	case k >= reflect.Int && k <= reflect.Int64:
		return "int"
	case k >= reflect.Uint && k <= reflect.Uint64:
		return "uint"
	case k == reflect.Float32 || k == reflect.Float64:
		return "float"
	}
	return ""
}

// Check reports, at once (errors.Join), every option of spec whose value
// is outside its valid tag, naming it as errors do (OptionName) with what
// is wanted, in its unit, and what it holds.
func Check(prefix string, spec any) error {
	root := reflect.ValueOf(spec).Elem()
	var errs []error
	for _, o := range Options(prefix, spec) {
		if o.Valid == "" {
			continue
		}
		v := root.FieldByIndex(o.index)
		if want, ok := validate(o, v); !ok {
			errs = append(errs, fmt.Errorf("%s must be %s, got %s", OptionName(prefix, o.name), want, shown(v)))
		}
	}
	return errors.Join(errs...)
}

// validate checks v against o's valid tag; it returns what is wanted.
// A valid tag that does not parse is a programming error: it panics.
func validate(o Option, v reflect.Value) (string, bool) {
	if strings.Contains(o.Valid, "|") {
		var allowed []string
		ok := false
		for _, a := range strings.Split(o.Valid, "|") {
			ok = ok || v.String() == a
			if a != "" {
				allowed = append(allowed, a)
			}
		}
		return oneOf(allowed), ok
	}
	x, isNum := number(v)
	if !isNum {
		panic(fmt.Sprintf("cliconfig: %s: valid tag %q on a %s", o.Env, o.Valid, v.Type()))
	}
	var want []string
	ok := true
	for _, c := range strings.Fields(o.Valid) {
		op := strings.TrimRight(c[:min(2, len(c))], "0123456789.-")
		bound := reflect.New(v.Type()).Elem()
		if err := decode(c[len(op):], bound); err != nil {
			panic(fmt.Sprintf("cliconfig: %s: valid tag %q: %v", o.Env, o.Valid, err))
		}
		b, _ := number(bound)
		words, holds := map[string]string{">=": "at least", ">": "more than", "<=": "at most", "<": "less than"}[op], false
		switch op {
		case ">=":
			holds = x >= b
		case ">":
			holds = x > b
		case "<=":
			holds = x <= b
		case "<":
			holds = x < b
		default:
			panic(fmt.Sprintf("cliconfig: %s: valid tag %q: unknown comparison %q", o.Env, o.Valid, c))
		}
		ok = ok && holds
		want = append(want, words+" "+format(bound))
	}
	s := strings.Join(want, " and ")
	if o.Unit != "" {
		s += " (" + o.Unit + ")"
	}
	return s, ok
}

// number is v as a float64, if v is a number.
func number(v reflect.Value) (float64, bool) {
	switch numeric(v.Kind()) {
	case "int":
		return float64(v.Int()), true
	case "uint":
		return float64(v.Uint()), true
	case "float":
		return v.Float(), true
	}
	return 0, false
}

// oneOf writes a list of allowed values: "a", "a or b", "a, b or c".
func oneOf(values []string) string {
	if len(values) <= 1 {
		return strings.Join(values, "")
	}
	return strings.Join(values[:len(values)-1], ", ") + " or " + values[len(values)-1]
}

// shown writes a value in an error: strings quoted.
func shown(v reflect.Value) string {
	if v.Kind() == reflect.String {
		return fmt.Sprintf("%q", v.String())
	}
	return format(v)
}
