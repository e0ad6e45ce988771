package paper

import (
	"strings"
	"testing"
)

// --iotlb-only replaces 7c by its variant (the sweep sets the kind, the
// title says so), keeps the other figures, and refuses a kind that is not
// one or a selection without 7c.
func TestIOTLBOnly(t *testing.T) {
	figs, err := AA.Lookup([]string{"6c", "7c"})
	if err != nil {
		t.Fatal(err)
	}
	got, err := IOTLBOnly(figs, "table", true)
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != figs[0] || !strings.Contains(got[1].Sweep, "machine.iommu.iotlb_only: [table]") || !strings.Contains(got[1].Title, "only the table's pages") {
		t.Errorf("7c variant: %q\n%s", got[1].Title, got[1].Sweep)
	}
	if !strings.Contains(got[1].Sweep, "workload.dht.inserts: [40]") {
		t.Errorf("reduced variant: %s", got[1].Sweep)
	}
	if strings.Contains(figs[1].Sweep, "iotlb_only") || !strings.Contains(figs[1].Sweep, "iotlb_by_kind: [true]") {
		t.Errorf("7c: %s", figs[1].Sweep)
	}
	for _, tc := range []struct {
		names []string
		kind  string
		want  string
	}{
		{[]string{"7c"}, "tables", "want a kind of page"},
		{[]string{"6c"}, "table", "applies to figure 7c"},
	} {
		fs, err := AA.Lookup(tc.names)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := IOTLBOnly(fs, tc.kind, false); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %s: %v, want %q", tc.names, tc.kind, err, tc.want)
		}
	}
}
