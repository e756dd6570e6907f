package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestAlertConfigErrors: invalid alert options fail at start naming every
// invalid variable.
func TestAlertConfigErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"--alert-fdr=2"}, []string{"CHANGERATE_ALERT_FDR", "2"}},
		{[]string{"--seasonal-decay=0", "--alert-site-top=0"}, []string{"CHANGERATE_SEASONAL_DECAY", "CHANGERATE_ALERT_SITE_TOP"}},
		{[]string{"--seasonal-learning=-1h"}, []string{"CHANGERATE_SEASONAL_LEARNING", "-1h"}},
		{[]string{"--alert-min-ratio=0.5", "--alert-min-events=-1"}, []string{"CHANGERATE_ALERT_MIN_RATIO", "CHANGERATE_ALERT_MIN_EVENTS"}},
		{[]string{"--alert-period=10ms"}, []string{"CHANGERATE_ALERT_PERIOD"}},
	} {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"--in=-"}, c.args...), strings.NewReader(""), &stdout, &stderr)
		if err == nil {
			t.Errorf("%v: no error", c.args)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: error %q does not name %q", c.args, err, w)
			}
		}
	}
}
