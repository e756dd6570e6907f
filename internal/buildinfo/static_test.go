package buildinfo

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// repoRoot is the repository root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// TestStaticRelease builds both programs with scripts/build-static.sh — the
// script the Dockerfile's build stage runs, so the flags are the image's
// flags — and checks that they are static ELF executables (no interpreter,
// no shared libraries: they run on distroless/static or scratch) whose
// --version prints what -ldflags -X stamped.
func TestStaticRelease(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both binaries")
	}
	if runtime.GOOS != "linux" {
		t.Skip("checks ELF binaries")
	}
	root := repoRoot(t)
	out := t.TempDir()
	cmd := exec.Command("sh", filepath.Join(root, "scripts", "build-static.sh"), out)
	cmd.Env = append(os.Environ(), "VERSION=v0.0.0-test.1", "REVISION=feedc0de", "DATE=2026-11-24T04:30:00Z")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build-static.sh: %v\n%s", err, b)
	}
	for _, prog := range []string{"aggregator", "ingest"} {
		bin := filepath.Join(out, prog)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatalf("%s: %v", prog, err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s: has an ELF interpreter (dynamically linked)", prog)
			}
		}
		if libs, err := f.ImportedLibraries(); err != nil || len(libs) > 0 {
			t.Errorf("%s: imports shared libraries %v (%v)", prog, libs, err)
		}
		f.Close()
		var stdout, stderr bytes.Buffer
		c := exec.Command(bin, "--version")
		c.Stdout, c.Stderr = &stdout, &stderr
		c.Env = []string{} // no CHANGERATE_* from the test's environment
		if err := c.Run(); err != nil {
			t.Fatalf("%s --version: %v\n%s", prog, err, stderr.String())
		}
		want := regexp.MustCompile(`^` + prog + ` v0\.0\.0-test\.1 \(revision feedc0de, built 2026-11-24T04:30:00Z, go1\.\d+[^ ]* linux/` + runtime.GOARCH + `\)\n$`)
		if !want.MatchString(stdout.String()) {
			t.Errorf("%s --version printed %q, want %s", prog, stdout.String(), want)
		}
		// -trimpath: no path of the build machine in the binary.
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(root)) {
			t.Errorf("%s contains the build directory %s: built without -trimpath", prog, root)
		}
	}
}

// TestDockerfile checks the Dockerfile's promises that docker itself cannot
// be asked about here (no daemon, no registry): the build stage runs the
// tested script, the final stage is distroless static running as 65532, and
// `make image` passes the stamps.
func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	b, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	df := string(b)
	var froms []string
	for _, l := range strings.Split(df, "\n") {
		if strings.HasPrefix(l, "FROM ") {
			froms = append(froms, l)
		}
	}
	if len(froms) != 2 {
		t.Fatalf("want a two-stage build, got FROM lines %q", froms)
	}
	if !strings.Contains(froms[1], "gcr.io/distroless/static") || !strings.HasSuffix(froms[1], ":nonroot") {
		t.Errorf("final stage %q: want gcr.io/distroless/static…:nonroot", froms[1])
	}
	for _, want := range []string{"./scripts/build-static.sh /out", "USER 65532:65532", "COPY --from=build /out/aggregator /out/ingest /",
		"ARG VERSION", "ARG REVISION", "ARG DATE"} {
		if !strings.Contains(df, want) {
			t.Errorf("Dockerfile lacks %q", want)
		}
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--build-arg VERSION=$(VERSION)", "--build-arg REVISION=$(REVISION)", "--build-arg DATE=$(DATE)", "-t $(IMAGE):$(VERSION)"} {
		if !strings.Contains(string(mk), want) {
			t.Errorf("Makefile's image target lacks %q", want)
		}
	}
	di, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains("\n"+string(di), "\nscripts") || strings.Contains("\n"+string(di), "\ncmd") {
		t.Error(".dockerignore excludes sources the build stage needs")
	}
}
