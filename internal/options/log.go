package options

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
)

// Log is the logging of a command: level and format of its log/slog
// handler.
type Log struct {
	Level  string `envconfig:"LOG_LEVEL" default:"info" demo:"true" desc:"debug, info, warn or error"`
	Format string `envconfig:"LOG_FORMAT" default:"text" demo:"true" desc:"text or json"`
}

// Validate reports every invalid option.
func (l Log) Validate() error {
	var errs []error
	if _, err := l.level(); err != nil {
		errs = append(errs, err)
	}
	if l.Format != "text" && l.Format != "json" {
		errs = append(errs, fmt.Errorf("%s must be text or json, got %q", Name("LOG_FORMAT"), l.Format))
	}
	return errors.Join(errs...)
}

func (l Log) level() (slog.Level, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(l.Level)); err != nil {
		return 0, fmt.Errorf("%s must be debug, info, warn or error, got %q", Name("LOG_LEVEL"), l.Level)
	}
	return lv, nil
}

// Logger is a logger writing to w, or Validate's error.
func (l Log) Logger(w io.Writer) (*slog.Logger, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	lv, _ := l.level()
	opts := &slog.HandlerOptions{Level: lv}
	if l.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}
