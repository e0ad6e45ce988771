// Package layout holds the test that keeps the tree's dependencies
// pointing one way: command → scenarios → workloads → systems (AA, the
// message layers) → machine → blocks → kernel, with the golden models
// importing no model.
package layout

import (
	"go/build"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/aaemu/aaemu/"

// rank of a package directory: a package may import only packages of its
// rank or below.
func rank(dir string) (int, bool) {
	switch {
	case dir == "sim" || dir == "internal/version" || dir == "internal/testtool":
		return 0, true
	case dir == "internal/input" || dir == "examples/machines" || dir == "pcie/tlp" || dir == "iommu/pte" || dir == "iommu/record" || dir == "nic/roce" || dir == "waveforms" || dir == "energy":
		return 1, true // format-only leaves, shared with the checkers
	case dir == "verify" || dir == "verify/monitor":
		return 1, true // the golden model and the protocol monitors: formats and the kernel only, never a model
	case dir == "pcie" || dir == "memory" || dir == "iommu" || dir == "nic" || dir == "nic/startx" || dir == "cpu" || dir == "scratchpad" || dir == "internal/demo" || dir == "internal/anchor" || dir == "torus" || dir == "collective":
		return 2, true // blocks
	case dir == "machine" || dir == "bgl":
		return 3, true // node and cluster assembly (bgl: Blue Gene/L's nodes on the torus)
	case dir == "verbs" || dir == "aa" || dir == "msg" || strings.HasPrefix(dir, "msg/"):
		return 4, true // the systems
	case dir == "workload" || strings.HasPrefix(dir, "workload/"):
		return 5, true
	case dir == "scenario":
		return 6, true
	case strings.HasPrefix(dir, "internal/"):
		return 7, true
	case strings.HasPrefix(dir, "cmd/"):
		return 8, true
	}
	return 0, false
}

func TestImportsPointDown(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || rel == "tools" || strings.HasPrefix(rel, "tools/") {
			if rel != "." {
				return filepath.SkipDir
			}
		}
		pkg, err := build.ImportDir(path, 0)
		if err != nil {
			return nil // no Go files here
		}
		mine, ok := rank(filepath.ToSlash(rel))
		if !ok {
			t.Errorf("%s: a package the layout does not place; give it a rank in this test", rel)
			return nil
		}
		// Tests may use what they check, so only the package's own files count.
		for _, imp := range pkg.Imports {
			if !strings.HasPrefix(imp, module) {
				continue
			}
			dep := strings.TrimPrefix(imp, module)
			theirs, ok := rank(dep)
			if !ok {
				continue // reported where it is walked
			}
			if theirs > mine {
				t.Errorf("%s imports %s, a layer above it", rel, dep)
			}
			if (rel == "verify" || rel == "verify/monitor") && theirs > 1 {
				t.Errorf("verify imports %s: the golden model must not import a model", dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
