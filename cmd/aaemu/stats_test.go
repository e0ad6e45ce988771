package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The host's speed is in host.json, so stats.json is byte-identical across
// runs even with it; host.json has each experiment's wall time, labelled
// as in stats.json.
func TestRunStatsDeterministicHostApart(t *testing.T) {
	a, _ := runSmall(t)
	b, _ := runSmall(t)
	x, _ := os.ReadFile(filepath.Join(a, "stats.json"))
	y, _ := os.ReadFile(filepath.Join(b, "stats.json"))
	if len(x) == 0 || !bytes.Equal(x, y) {
		t.Fatal("stats.json differs between two runs with the host's speed recorded")
	}
	var st struct {
		FormatVersion int `json:"format_version"`
		Experiments   []struct{ Label string }
	}
	if err := json.Unmarshal(x, &st); err != nil {
		t.Fatal(err)
	}
	var host struct {
		Format      string
		WallSeconds float64 `json:"wall_seconds"`
		Experiments []struct {
			Label        string
			WallSeconds  float64 `json:"wall_seconds"`
			PeakRSSBytes uint64  `json:"peak_rss_bytes"`
		}
	}
	raw, err := os.ReadFile(filepath.Join(a, "host.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &host); err != nil {
		t.Fatal(err)
	}
	if st.FormatVersion != 2 || host.Format != "aaemu-host" || host.WallSeconds <= 0 || len(host.Experiments) != len(st.Experiments) || len(st.Experiments) != 4 {
		t.Fatalf("stats.json v%d with %d experiments; host.json:\n%s", st.FormatVersion, len(st.Experiments), raw)
	}
	for i, h := range host.Experiments {
		if h.Label != st.Experiments[i].Label || h.WallSeconds <= 0 || h.PeakRSSBytes == 0 {
			t.Fatalf("host.json experiment %d: %+v", i, h)
		}
	}
}
