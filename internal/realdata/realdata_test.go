package realdata

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A missing folder skips the test normally and fails it under CI=true
// (checked in a child process, since a skip or failure ends the test).
func TestMissingData(t *testing.T) {
	if os.Getenv("REALDATA_CHILD") == "1" {
		Dir(t, "no-such-entry")
		return
	}
	for _, c := range []struct {
		ci       string
		wantFail bool
	}{{"", false}, {"true", true}} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestMissingData$", "-test.v")
		cmd.Env = append(os.Environ(), "REALDATA_CHILD=1", "CI="+c.ci, "CHANGERATE_DATA="+filepath.Join(t.TempDir(), "none"))
		out, err := cmd.CombinedOutput()
		failed := err != nil
		if failed != c.wantFail {
			t.Errorf("CI=%q: failed=%v, want %v\n%s", c.ci, failed, c.wantFail, out)
		}
		if !c.wantFail && !strings.Contains(string(out), "SKIP") {
			t.Errorf("CI=%q: not skipped\n%s", c.ci, out)
		}
	}
}
