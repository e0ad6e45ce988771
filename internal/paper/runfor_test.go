package paper

import (
	"context"
	"strings"
	"testing"

	"github.com/aaemu/aaemu/aa"
)

// runFor fails a run whose processes did not finish, saying why, rather
// than let a figure read the result of a run cut short: a process waiting
// for a word nothing will write leaves the cluster quiet; one that
// finishes passes.
func TestRunForFailsAnUnfinishedRun(t *testing.T) {
	for _, written := range []bool{true, false} {
		c, err := clusterOf(2, 1, "srd")
		if err != nil {
			t.Fatal(err)
		}
		n0 := c.Nodes[0]
		flag := n0.Alloc(4096)
		if written {
			n0.Mem.Store64(flag, 1)
		}
		n0.Spawn(0, "waiter", func(x *aa.Ctx) { x.P.PollWord(flag, func(v uint64) bool { return v == 1 }) })
		err = runFor(context.Background(), c, nil)
		switch {
		case written && err != nil:
			t.Errorf("written: %v", err)
		case !written && (err == nil || !strings.Contains(err.Error(), "did not finish: nothing was left to happen from")):
			t.Errorf("never written: error %v, want a quiet run's", err)
		}
		c.Close()
	}
}
