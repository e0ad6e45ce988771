package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `aaemu paper am2 table4 table5 --reduced` runs seed 000's application
// tables on reduced sizes into OUT/am2/: the points, the plots and the
// claims. Table 6 needs AM-II's network protocol: until it runs, asking for
// it is a clear error that names it, and the claims of the tables before
// it stay in claims.md.
func TestPaperAM2Apps(t *testing.T) {
	dir := t.TempDir()
	out, err := aaemu(t, "paper", "am2", "table4", "table5", "--reduced", "--out", dir, "-j", "2")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, want := range []string{"Figure table4", "Table 4: messages per processor on the Clump", "48 and 14", "A16 EM3D", "Figure table5", "A13 multi-protocol against shared memory only on one SMP"} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
	for _, f := range []string{"figtable4/points.csv", "figtable4/figtable4.png", "figtable4/figtable4.svg", "figtable5/points.csv", "figtable5/figtable5.png", "claims.md"} {
		if st, err := os.Stat(filepath.Join(dir, "am2", f)); err != nil || st.Size() < 100 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	csv, err := os.ReadFile(filepath.Join(dir, "am2", "figtable4", "points.csv"))
	if err != nil || !strings.HasPrefix(string(csv), "processors,run,scheme,messages_per_processor\n32,3D FFT,\"network short, mean\",") || strings.Count(string(csv), "\n") != 1+5*8 {
		t.Fatalf("points.csv: %v\n%s", err, csv)
	}
	out, err = aaemu(t, "paper", "am2", "table6", "--reduced", "--out", dir)
	claims, _ := os.ReadFile(filepath.Join(dir, "am2", "claims.md"))
	switch {
	case err == nil: // the network protocol is there
		if !strings.Contains(out, "A14 Clump against NOW") {
			t.Fatalf("table 6:\n%s", out)
		}
	case !strings.Contains(err.Error(), "no platform of table 6 runs yet"):
		t.Fatalf("table 6: %v\n%s", err, out)
	case !strings.Contains(string(claims), "Incomplete: figure table6 did not finish"):
		t.Fatalf("claims.md:\n%s", claims)
	}
}
