package sweep_test

import (
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/aaemu/aaemu/internal/paper"
	"github.com/aaemu/aaemu/internal/sweep"
)

// Every key the example sweeps and the paper's figures vary or plot is in
// the label table, so their plots name nothing by its YAML key.
func TestSweepKeysHaveLabels(t *testing.T) {
	specs := map[string]*sweep.Spec{}
	files, err := filepath.Glob("../../examples/sweep-*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("example sweeps: %v %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if specs[f], err = sweep.Parse(f, data, filepath.Dir(f)); err != nil {
			t.Fatal(err)
		}
	}
	for _, f := range paper.Figures() {
		if f.Sweep == "" {
			continue
		}
		s, err := sweep.Parse("figure "+f.Name, []byte(f.Sweep), ".")
		if err != nil {
			t.Fatal(err)
		}
		specs["figure "+f.Name] = s
	}
	for name, s := range specs {
		keys := []string{s.Plot.X}
		for _, y := range s.Plot.Y {
			if y != "rate" { // named from the rows' unit
				keys = append(keys, y)
			}
		}
		for _, a := range s.Grid {
			keys = append(keys, a.Key)
			for _, v := range a.Values {
				if v.Kind == yaml.MappingNode { // keys of a section set together
					for i := 0; i+1 < len(v.Content); i += 2 {
						keys = append(keys, a.Key+"."+v.Content[i].Value)
					}
				}
			}
		}
		for _, k := range keys {
			if k != "" && !sweep.LabelKnown(k) {
				t.Errorf("%s: %s has no label", name, k)
			}
		}
	}
}
