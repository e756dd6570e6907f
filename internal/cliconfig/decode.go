package cliconfig

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Decoder is implemented by option types that parse their own values
// (byte sizes, enumerations); the error's message is shown to the user.
// Its method is that of kelseyhightower/envconfig's Decoder.
type Decoder interface {
	Decode(value string) error
}

// Setter is implemented by option types that parse their own values as
// flag.Value does; the error's message is shown to the user.
type Setter interface {
	Set(value string) error
}

var (
	durationType = reflect.TypeFor[time.Duration]()
	byteSizeType = reflect.TypeFor[ByteSize]()
)

// selfDecoding returns how field's value parses itself, if it does.
func selfDecoding(field reflect.Value) func(string) error {
	if !field.CanAddr() {
		return nil
	}
	switch p := field.Addr().Interface().(type) {
	case Decoder:
		return p.Decode
	case Setter:
		return p.Set
	case encoding.TextUnmarshaler:
		return func(s string) error { return p.UnmarshalText([]byte(s)) }
	}
	return nil
}

var (
	decoderType = reflect.TypeFor[Decoder]()
	setterType  = reflect.TypeFor[Setter]()
	textType    = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// hasDecoder says whether values of t parse themselves.
func hasDecoder(t reflect.Type) bool {
	p := reflect.PointerTo(t)
	return p.Implements(decoderType) || p.Implements(setterType) || p.Implements(textType)
}

// decode parses value into field as kelseyhightower/envconfig does:
// the field's own decoder if it has one, else by kind; slices are
// comma-separated.
func decode(value string, field reflect.Value) error {
	if d := selfDecoding(field); d != nil {
		return d(value)
	}
	typ := field.Type()
	if typ.Kind() == reflect.Pointer {
		if field.IsNil() {
			field.Set(reflect.New(typ.Elem()))
		}
		return decode(value, field.Elem())
	}
	switch typ.Kind() {
	case reflect.String:
		field.SetString(value)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		if typ == durationType {
			d, err := time.ParseDuration(value)
			if err != nil {
				return err
			}
			field.SetInt(int64(d))
			return nil
		}
		n, err := strconv.ParseInt(value, 0, typ.Bits())
		if err != nil {
			return err
		}
		field.SetInt(n)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(value, 0, typ.Bits())
		if err != nil {
			return err
		}
		field.SetUint(n)
	case reflect.Bool:
		b, err := strconv.ParseBool(value)
		if err != nil {
			return err
		}
		field.SetBool(b)
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(value, typ.Bits())
		if err != nil {
			return err
		}
		field.SetFloat(x)
	case reflect.Slice:
		sl := reflect.MakeSlice(typ, 0, 0)
		if strings.TrimSpace(value) != "" {
			parts := strings.Split(value, ",")
			sl = reflect.MakeSlice(typ, len(parts), len(parts))
			for i, p := range parts {
				if err := decode(p, sl.Index(i)); err != nil {
					return err
				}
			}
		}
		field.Set(sl)
	default:
		return fmt.Errorf("cliconfig: options of type %s are not supported", typ)
	}
	return nil
}

// want says in words what a field's values must be, rather than Go's type
// and parser names (strconv.ParseInt, time.Duration, main.byteSize). The
// parser's own error is kept only for types that parse themselves, whose
// messages are written for users.
func want(field reflect.Value, err error) string {
	if hasDecoder(field.Type()) {
		return "a valid value: " + err.Error()
	}
	typ := field.Type()
	for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
		typ = typ.Elem()
	}
	switch {
	case typ == durationType:
		return "a duration such as 500ms, 30s, 10m or 1h"
	case typ.Kind() >= reflect.Int && typ.Kind() <= reflect.Int64:
		return "a whole number"
	case typ.Kind() >= reflect.Uint && typ.Kind() <= reflect.Uint64:
		return "a whole number >= 0"
	case typ.Kind() == reflect.Float32 || typ.Kind() == reflect.Float64:
		return "a number"
	case typ.Kind() == reflect.Bool:
		return "true or false"
	}
	return "a valid value"
}

// format writes a field's value as decode reads it (the documented
// default of a field without a default tag).
func format(v reflect.Value) string {
	if v.Kind() == reflect.Slice {
		parts := make([]string, v.Len())
		for i := range parts {
			parts[i] = format(v.Index(i))
		}
		return strings.Join(parts, ",")
	}
	if v.Type() == durationType {
		// 1h and 10m rather than 1h0m0s and 10m0s.
		s := v.Interface().(time.Duration).String()
		if strings.HasSuffix(s, "m0s") {
			s = strings.TrimSuffix(s, "0s")
		}
		if strings.HasSuffix(s, "h0m") {
			s = strings.TrimSuffix(s, "0m")
		}
		return s
	}
	if s, ok := v.Interface().(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprint(v.Interface())
}
