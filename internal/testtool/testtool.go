// Package testtool finds the external programs that acceptance tests run.
package testtool

import (
	"os"
	"os/exec"
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
