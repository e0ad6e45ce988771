package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/verify"
)

// `aaemu verify --seeds 1000` passes with every coverage bin hit.
func TestVerifyThousandSeeds(t *testing.T) {
	out, err := aaemu(t, "verify", "--seeds", "1000", "--jobs", "2", "--coverage", "--out", t.TempDir())
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "1000 of 1000 seeds agree") {
		t.Fatalf("summary:\n%s", out)
	}
	n := len(verify.AllBins())
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
