package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aaemu/aaemu/internal/testtool"
	"github.com/aaemu/aaemu/sim"
)

// onTerminal runs aaemu with a pseudo-terminal as its stdout and stderr
// (util-linux's script) and returns what the terminal got.
func onTerminal(t *testing.T, args ...string) string {
	t.Helper()
	script := testtool.Need(t, "script")
	// script's terminal has no size until it is given one.
	cmdline := "stty cols 160 rows 40; exec " + aaemuBinary(t)
	for _, a := range args {
		cmdline += " '" + a + "'"
	}
	out, err := exec.Command(script, "-qefc", cmdline, "/dev/null").CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	return string(out)
}

var progressLine = regexp.MustCompile(`sim [0-9.]+(ps|ns|µs|ms|s)  [0-9.]+(ps|ns|µs|ms|s)/s  ETA (…|[0-9hms.]+)`)

// On a terminal `aaemu run` shows each experiment's simulated time, its
// simulated time per wall second and an ETA while it runs; piped, its
// stderr stays empty and its stdout is the table alone.
func TestRunShowsProgressOnTerminal(t *testing.T) {
	dir := t.TempDir()
	sc := writeTemp(t, dir, "long.yaml", strings.Replace(longScenario, "inserts: 20000", "inserts: 8000", 1))
	term := onTerminal(t, "run", sc, "--out", filepath.Join(dir, "a"), "--no-vcd", "--no-pcap")
	if !progressLine.MatchString(term) || !strings.Contains(term, "RMA at 5% collisions   [") {
		t.Fatalf("no progress line on the terminal:\n%q", term)
	}
	if !regexp.MustCompile(`ETA [0-9]`).MatchString(term) {
		t.Fatalf("no ETA on the terminal:\n%q", term)
	}

	cmd := exec.Command(aaemuBinary(t), "run", sc, "--out", filepath.Join(dir, "b"), "--no-vcd", "--no-pcap")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	if stderr.Len() != 0 || strings.Contains(stdout.String(), "ETA") {
		t.Fatalf("piped output has progress:\nstderr %q\nstdout %q", stderr.String(), stdout.String())
	}
}

// A sweep on a terminal shows its running experiments and a line over all
// of them, counted in experiments, whose ETA counts down.
func TestSweepShowsProgressOnTerminal(t *testing.T) {
	dir := t.TempDir()
	writeTemp(t, dir, "base.yaml", "seed: 3\nworkload:\n  dht:\n    cells: 65536\n    collisions: [0.05]\n    schemes: [RMA]\n")
	sw := writeTemp(t, dir, "sweep.yaml", "scenario: base.yaml\ngrid:\n  workload.dht.inserts: [6000, 6000, 6000]\nplot:\n  y: [inserts_per_second]\n")
	term := onTerminal(t, "sweep", sw, "--out", filepath.Join(dir, "out"), "-j", "1")
	if !progressLine.MatchString(term) || !strings.Contains(term, "workload.dht.inserts=6000 RMA at 5% collisions") {
		t.Fatalf("no experiment's progress line:\n%q", term)
	}
	counts := regexp.MustCompile(`([0-9]+)/3 experiments  ETA ([0-9hms.]+)`).FindAllStringSubmatch(term, -1)
	if len(counts) < 2 {
		t.Fatalf("no overall line with an ETA:\n%q", term)
	}
	// The ETA shrinks as the sweep goes on.
	first, _ := time.ParseDuration(counts[0][2])
	last, _ := time.ParseDuration(counts[len(counts)-1][2])
	if last > first {
		t.Fatalf("the ETA went from %v to %v", first, last)
	}
}

// The progress line's simulated times are short.
func TestShortTime(t *testing.T) {
	for _, c := range []struct {
		t    sim.Tick
		want string
	}{{0, "0ps"}, {1500, "1.50ns"}, {42_420_050_000, "42.4ms"}, {3 * sim.S, "3.00s"}, {250 * sim.US, "250µs"}} {
		if got := short(c.t); got != c.want {
			t.Errorf("short(%d) = %q, want %q", c.t, got, c.want)
		}
	}
}
