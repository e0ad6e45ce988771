package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/verify"
)

// `aaemu verify --seeds 1000` passes with every coverage bin hit, the
// API level's included.
func TestVerifyThousandSeeds(t *testing.T) {
	out, err := aaemu(t, "verify", "--seeds", "1000", "--jobs", "2", "--coverage", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "1000 of 1000 seeds agree") {
		t.Fatalf("summary:\n%s", out)
	}
	all := verify.NewCoverage()
	all.DeclareAPI()
	n := len(all.Missed()) // every bin of both levels, none hit yet
	if strings.Contains(out, "never hit") || !strings.Contains(out, fmt.Sprintf("%d of %d bins hit", n, n)) {
		t.Fatalf("coverage incomplete:\n%s", out)
	}
}

// A replay file runs one stimulus.
func TestVerifyReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.json")
	if err := verify.Generate(77).Save(path); err != nil {
		t.Fatal(err)
	}
	out, err := aaemu(t, "verify", "--replay", path)
	if err != nil || !strings.Contains(out, "agree with the golden model") {
		t.Fatalf("%v\n%s", err, out)
	}
	if _, err := aaemu(t, "verify", "--replay", filepath.Join(dir, "missing.json")); err == nil {
		t.Fatal("a missing replay file accepted")
	}
}

// A replay file with a field out of its range is refused with the file,
// the line and the field, before anything runs: a consumer period that
// wraps around to zero picoseconds, or that would take the run to the
// end of time, a log of zero bytes, an unknown notification mode.
func TestVerifyReplayOutOfRange(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		mut       func(s *verify.Stimulus)
		key, want string
	}{
		{func(s *verify.Stimulus) { s.ConsumerNS = 1 << 61 }, `"consumer_period_ns"`, "consumer_period_ns: 2305843009213693952 is out of range (1..1000000 ns)"},
		{func(s *verify.Stimulus) { s.ConsumerNS = 1 << 50 }, `"consumer_period_ns"`, "consumer_period_ns: 1125899906842624 is out of range (1..1000000 ns)"},
		{func(s *verify.Stimulus) { s.Logs[0].Size = 0 }, `"size"`, "logs[0].size: 0 is out of range (a multiple of 8 from 64 to 1048576 bytes)"},
		{func(s *verify.Stimulus) { s.Logs[0].Mode = 9 }, `"mode"`, "logs[0].mode: 9 is not a notification mode (0: Poll, 1: Int, 2: SP)"},
	} {
		s := verify.Generate(77)
		c.mut(s)
		path := filepath.Join(dir, "r.json")
		if err := s.Save(path); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		line := strings.Count(string(b[:strings.Index(string(b), c.key)]), "\n") + 1
		_, err = aaemu(t, "verify", "--replay", path)
		if want := fmt.Sprintf("%s:%d: %s", path, line, c.want); err == nil || err.Error() != want {
			t.Errorf("\n got %v\nwant %s", err, want)
		}
	}
}

// Every mutant of `make mutants` still applies: its original text is in
// its file exactly once (a refactoring that moves the rule a mutant breaks
// leaves it stale, and `make mutants` would not test it).
func TestMutantsApply(t *testing.T) {
	cmd := exec.Command("python3", "tools/mutants/mutants.py", "--check")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mutants apply") {
		t.Fatalf("%v\n%s", err, out)
	}
}
