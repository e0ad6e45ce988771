// Package monitor holds protocol monitors in the style of SystemVerilog
// assertions: they watch a PCIe link or an Ethernet wire from outside the
// blocks that drive it and report every transaction that breaks a rule of
// the protocol. They import only the kernel (for time, transaction IDs and
// its observation hooks) and the format-only packages pcie/tlp and
// nic/roce, never a model, so a bug in a block cannot hide in the checker.
//
// A monitor is fed events (a TLP handed to a link's transmitter, arriving
// in its receiver's buffer, taken from it; a frame on a wire; a TLP a NIC
// sends its host) and writes each violation to a Log, which keeps them in a
// deterministic order whatever the order of the domains that reported them.
package monitor

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/aaemu/aaemu/sim"
)

// Violation is one broken rule.
type Violation struct {
	Link string    // the link, direction or wire where it showed
	At   sim.Tick  // simulated time of the event that broke it
	Txn  sim.TxnID // the transaction that broke it
	Rule string    // the rule, short: "PCIe D2a", "credits", "RC exactly-once"
	Msg  string    // what happened
}

func (v Violation) String() string {
	return fmt.Sprintf("%s at %v, txn %v: [%s] %s", v.Link, v.At, v.Txn, v.Rule, v.Msg)
}

// Log collects the violations of several monitors. It is safe for monitors
// that run in several domains at once; Violations sorts them.
type Log struct {
	mu  sync.Mutex
	v   []Violation
	max int
	n   int
}

// NewLog returns a log that keeps the first max violations (all if max ≤ 0)
// and counts the rest.
func NewLog(max int) *Log { return &Log{max: max} }

// Report adds a violation.
func (l *Log) Report(v Violation) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	if l.max <= 0 || len(l.v) < l.max {
		l.v = append(l.v, v)
	}
}

func (l *Log) reportf(link string, at sim.Tick, id sim.TxnID, rule, format string, a ...any) {
	l.Report(Violation{Link: link, At: at, Txn: id, Rule: rule, Msg: fmt.Sprintf(format, a...)})
}

// Count is the number of violations reported, kept or not.
func (l *Log) Count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// Violations returns the kept violations by time, then link, transaction,
// rule and message: the same list whatever the domains' interleaving.
func (l *Log) Violations() []Violation {
	l.mu.Lock()
	v := slices.Clone(l.v)
	l.mu.Unlock()
	slices.SortStableFunc(v, func(a, b Violation) int {
		return cmp.Or(cmp.Compare(a.At, b.At), cmp.Compare(a.Link, b.Link), cmp.Compare(a.Txn, b.Txn),
			cmp.Compare(a.Rule, b.Rule), cmp.Compare(a.Msg, b.Msg))
	})
	return v
}

// Err is nil without violations, else an error listing the first few.
func (l *Log) Err() error {
	v := l.Violations()
	if len(v) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d protocol violation(s)", l.Count())
	for i, x := range v {
		if i == 5 {
			fmt.Fprintf(&b, "\n  ...")
			break
		}
		fmt.Fprintf(&b, "\n  %v", x)
	}
	return fmt.Errorf("%s", b.String())
}
