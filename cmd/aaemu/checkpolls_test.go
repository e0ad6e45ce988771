package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// --check-every-poll on sweep, paper and workload (the flag of run, shared)
// changes no output: every file they write but the sweep's per-task parts
// (which carry the host's wall time) and the table they print are the same
// with it and without. That the option reaches the cores, and changes
// their evaluations, is tested where each command hands it on
// (internal/sweep, internal/paper, scenario).
func TestCheckEveryPollChangesNoOutput(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		args []string // --out DIR, or {{OUT}} where the command takes a file
	}{
		{"sweep", []string{"sweep", "../../examples/sweep-compute.yaml", "-j", "1", "--out", "{{OUT}}"}},
		{"workload", []string{"workload", "xor", "--nodes", "4", "--size", "256", "--json", "{{OUT}}/rows.json"}},
		{"paper", []string{"paper", "multirail", "5b", "--fragment", "64KB", "--fragments", "4", "-j", "1", "--out", "{{OUT}}"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var ref map[string][]byte
			var refText string
			for _, check := range []bool{false, true} {
				out := filepath.Join(dir, c.name, map[bool]string{false: "sleep", true: "check"}[check])
				if err := os.MkdirAll(out, 0o755); err != nil {
					t.Fatal(err)
				}
				var args []string
				for _, a := range c.args {
					args = append(args, strings.ReplaceAll(a, "{{OUT}}", out))
				}
				if check {
					args = append(args, "--check-every-poll")
				}
				text, err := aaemu(t, args...)
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, text)
				}
				text = withoutTimes(strings.ReplaceAll(tableOf(text), out, "OUT"))
				files := readTree(t, out)
				if !check {
					ref, refText = files, text
					if len(files) == 0 {
						t.Fatal("no outputs")
					}
					continue
				}
				if text != refText {
					t.Errorf("with --check-every-poll the table differs:\n%s\nwant\n%s", text, refText)
				}
				for name, want := range ref {
					if got, ok := files[name]; !ok || !bytes.Equal(got, want) {
						t.Errorf("with --check-every-poll %s differs (%d bytes, want %d)", name, len(got), len(want))
					}
				}
				if len(files) != len(ref) {
					t.Errorf("with --check-every-poll %d files, without %d", len(files), len(ref))
				}
			}
		})
	}
}

// readTree reads every file under dir but the sweeps' parts, by path.
func readTree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	m := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if d.Name() == "parts" {
				return filepath.SkipDir
			}
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		m[rel] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// withoutTimes drops the lines that give the host's time ("(18
// experiments in 127ms; …").
func withoutTimes(s string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, " experiments in ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
