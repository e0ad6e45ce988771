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

// An API-level replay file runs its stimulus; one with a mistake is refused
// with the file, the line and the key before anything runs.
func TestVerifyAPIReplay(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	if err := verify.GenerateAPI(3).Save(path); err != nil {
		t.Fatal(err)
	}
	out, err := aaemu(t, "verify", "--replay", path, "--out", dir)
	if err != nil || !strings.Contains(out, "operations across two nodes agree with the golden model") {
		t.Fatalf("%v\n%s", err, out)
	}
	s := verify.GenerateAPI(3)
	s.PMTU = 1000
	if err := s.Save(path); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	line := strings.Count(string(b[:strings.Index(string(b), `"pmtu"`)]), "\n") + 1
	_, err = aaemu(t, "verify", "--replay", path, "--out", dir)
	if want := fmt.Sprintf("%s:%d: pmtu: 1000 is not a path MTU (256, 512, 1024, 2048 or 4096)", path, line); err == nil || err.Error() != want {
		t.Fatalf("\n got %v\nwant %s", err, want)
	}
}

// A deliberately broken NIC (it acknowledges the PSN after the one it
// received: the RC monitor's rule) fails `aaemu verify` at the API level;
// the failure shrinks to a replay file, with a VCD and the monitors'
// messages, that fails again on the broken NIC and passes on the right one.
func TestVerifyAPIBrokenModelReplays(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a broken aaemu")
	}
	dir := t.TempDir()
	src, err := os.ReadFile("../../nic/qp.go")
	if err != nil {
		t.Fatal(err)
	}
	const old = "\t\tif p.AckReq {\n\t\t\tq.ack(p.PSN, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst"
	if strings.Count(string(src), old) != 1 {
		t.Fatal("the rule this test breaks is no longer in nic/qp.go once")
	}
	broken := strings.Replace(string(src), old, "\t\tif p.AckReq {\n\t\t\tq.ack((p.PSN+1)&0xffffff, roce.SyndromeAck, f.ID)\n\t\t}\n\tcase roce.SendFirst", 1)
	qp, overlay, exe := filepath.Join(dir, "qp.go"), filepath.Join(dir, "overlay.json"), filepath.Join(dir, "aaemu")
	abs, err := filepath.Abs("../../nic/qp.go")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(qp, []byte(broken), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(overlay, []byte(fmt.Sprintf(`{"Replace": {%q: %q}}`, abs, qp)), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("go", "build", "-overlay", overlay, "-ldflags=-s -w", "-o", exe, ".").CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	out := filepath.Join(dir, "out")
	b, err := exec.Command(exe, "verify", "--seeds", "1", "--api-seeds", "1", "--out", out).CombinedOutput()
	text := string(b)
	if err == nil || !strings.Contains(text, "API MISMATCH seed 1: monitor") || !strings.Contains(text, "shrunk from") ||
		!strings.Contains(text, "monitors:\n") || !strings.Contains(text, "[RC ACK]") {
		t.Fatalf("the broken NIC: %v\n%s", err, text)
	}
	replay := filepath.Join(out, "verify-api-seed1.json")
	s, err := os.ReadFile(replay)
	if err != nil {
		t.Fatal(err)
	}
	small, err := verify.ParseAPI(replay, s)
	if err != nil {
		t.Fatal(err)
	}
	if orig := verify.GenerateAPI(1); len(small.Ops) >= len(orig.Ops) {
		t.Fatalf("not shrunk: %d of %d operations", len(small.Ops), len(orig.Ops))
	}
	for _, ext := range []string{".vcd", ".gtkw"} {
		if st, err := os.Stat(filepath.Join(out, "verify-api-seed1"+ext)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", ext, err)
		}
	}
	again, err := exec.Command(exe, "verify", "--replay", replay, "--out", filepath.Join(dir, "again")).CombinedOutput()
	if err == nil || !strings.Contains(string(again), "[RC ACK]") {
		t.Fatalf("the replay on the broken NIC: %v\n%s", err, again)
	}
	if o, err := aaemu(t, "verify", "--replay", replay, "--out", filepath.Join(dir, "right")); err != nil {
		t.Fatalf("the replay on the right NIC: %v\n%s", err, o)
	}
}
