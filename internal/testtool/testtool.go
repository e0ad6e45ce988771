// Package testtool finds and runs the external programs that acceptance
// tests use.
package testtool

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// Need returns the path of program name. A missing program skips the test
// on a developer's machine (run `make deps`) and fails it under CI, where
// `make test` must have installed it.
func Need(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("%s is not installed; `make deps` installs it", name)
		}
		t.Skipf("%s is not installed; run `make deps`", name)
	}
	return p
}

// TsharkArgs starts a tshark command line: Wireshark's "Ethernet over IB"
// heuristic is turned off, because it takes payload data whose bytes 2–3 are
// zero (a small little-endian key, say) for an EtherType and then calls the
// frame malformed.
func TsharkArgs(args ...string) []string {
	return append([]string{"--disable-heuristic", "eth_over_ib"}, args...)
}

// GTKWaveView is what GTKWave shows when it opens a save file
// (tools/gtkwave/probe.sh): the time window on screen, the width of the wave
// area, and every row of the signal pane.
type GTKWaveView struct {
	Start, End uint64 // in the VCD's time unit
	WaveWidth  int    // pixels
	Traces     []GTKWaveTrace
}

// GTKWaveTrace is one row: GTKWave's trace flags (analyzer.h), the name it
// shows (group labels too) and the value it shows at each probed time.
type GTKWaveTrace struct {
	Flags  uint64
	Name   string
	Values map[uint64]string
}

// GTKWaveProbe opens the save file gtkw alone in GTKWave on a virtual
// display and reports what it shows, with each row's value at the given
// times. It needs xvfb-run and gtkwave (see Need).
func GTKWaveProbe(t testing.TB, gtkw string, times ...uint64) *GTKWaveView {
	t.Helper()
	Need(t, "xvfb-run")
	Need(t, "gtkwave")
	_, here, _, _ := runtime.Caller(0)
	script := filepath.Join(filepath.Dir(here), "..", "..", "tools", "gtkwave", "probe.sh")
	out := filepath.Join(t.TempDir(), "probe.txt")
	args := []string{gtkw, out}
	for _, tm := range times {
		args = append(args, strconv.FormatUint(tm, 10))
	}
	if msg, err := exec.Command(script, args...).CombinedOutput(); err != nil {
		t.Fatalf("probe.sh: %v\n%s", err, msg)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	v := &GTKWaveView{}
	for _, line := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		f := strings.SplitN(line, " ", 4)
		var err error
		switch {
		case f[0] == "window" && len(f) == 3:
			v.Start, err = strconv.ParseUint(f[1], 10, 64)
			if err == nil {
				v.End, err = strconv.ParseUint(f[2], 10, 64)
			}
		case f[0] == "wavewidth" && len(f) == 2:
			v.WaveWidth, err = strconv.Atoi(f[1])
		case f[0] == "trace" && len(f) >= 3:
			var fl uint64
			if fl, err = strconv.ParseUint(f[2], 10, 64); err == nil {
				name := ""
				if len(f) == 4 {
					name = f[3]
				}
				v.Traces = append(v.Traces, GTKWaveTrace{Flags: fl, Name: name, Values: map[uint64]string{}})
			}
		case f[0] == "value" && len(f) >= 3:
			var tm uint64
			var i int
			if tm, err = strconv.ParseUint(f[1], 10, 64); err == nil {
				if i, err = strconv.Atoi(f[2]); err == nil && i < len(v.Traces) {
					val := ""
					if len(f) == 4 {
						val = f[3]
					}
					v.Traces[i].Values[tm] = val
				}
			}
		default:
			err = fmt.Errorf("unexpected line")
		}
		if err != nil {
			t.Fatalf("probe output %q: %v", line, err)
		}
	}
	return v
}
