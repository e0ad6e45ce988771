package nic

import (
	"fmt"

	"github.com/aaemu/aaemu/pcie/tlp"
	"github.com/aaemu/aaemu/sim"
)

// CQDoorbells is the offset in the BAR of the completion queues' arm
// doorbells: software writes ArmNextCompletion | ci to BAR + CQDoorbells +
// 8 × CQN to ask for one event (an MSI), as ibv_req_notify_cq does. ci is
// the number of entries software has consumed: as with mlx5's arm, entries
// the NIC wrote beyond it count towards the event at once, so one that is
// still on its way to memory when software last looked is never left
// without an interrupt.
const CQDoorbells = 0xc_0000

// ArmNextCompletion is the command bit of an arm doorbell write; writes
// without it are reserved and ignored (solicited-only events are not
// modelled).
const ArmNextCompletion = 1 << 63

// MaxCQN is the largest completion queue number: the arm doorbells end at
// the BAR's 1 MB.
const MaxCQN = (0x10_0000 - CQDoorbells) / 8

// Moderation is completion-event moderation, as mlx5's cq_count and
// cq_period: an armed CQ raises its event once Count completions have been
// written since it was armed, or Period after the first of them, whichever
// comes first.
type Moderation struct {
	Count    int      // completions per event (1: every completion)
	PeriodPS sim.Tick // the longest a completion waits for its event (0: no limit)
}

// CQConfig creates a completion queue that several queue pairs can share
// as their receive CQ, with a completion vector: the MSI its events raise.
type CQConfig struct {
	CQN        uint32
	Base       uint64 // Size entries of CQESize bytes
	Size       int
	MSIAddr    uint64 // the MSI of the completion vector (0xFEEx_xxxx on x86)
	MSIData    uint32
	Moderation Moderation
}

// Validate checks the configuration.
func (c CQConfig) Validate() error {
	switch {
	case c.CQN == 0 || c.CQN > MaxCQN:
		return fmt.Errorf("CQN %d out of 1..%d", c.CQN, MaxCQN)
	case c.Size < 1:
		return fmt.Errorf("CQ %d: size %d", c.CQN, c.Size)
	case c.Moderation.Count < 1:
		return fmt.Errorf("CQ %d: moderation count %d, want at least 1", c.CQN, c.Moderation.Count)
	case c.MSIAddr>>20 != 0xfee:
		return fmt.Errorf("CQ %d: MSI address %#x is outside the interrupt window 0xFEE00000-0xFEEFFFFF", c.CQN, c.MSIAddr)
	}
	return nil
}

// cq is a completion queue with events: its ring's producer index and the
// one-shot arm with its moderation counter and timer.
type cq struct {
	cfg     CQConfig
	tail    uint64   // entries written
	armed   bool     // one event is requested
	since   int      // entries written since it was armed
	timerAt sim.Tick // moderation period ends (0: not running)
	cause   sim.TxnID
}

// CreateCQ creates a completion queue with a completion vector. Bind it to
// queue pairs with SetRecvCQ. It starts disarmed: no event until software
// arms it.
func (n *NIC) CreateCQ(c CQConfig) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("%s: %w", n.name, err)
	}
	if _, dup := n.cqs[c.CQN]; dup {
		return fmt.Errorf("%s: CQN %d is taken", n.name, c.CQN)
	}
	if n.cqs == nil {
		n.cqs = map[uint32]*cq{}
		// Counted only on NICs that have event CQs: the statistics of runs
		// without them stay as they were.
		st := n.u.Engine().Stats()
		n.stCQEvents = st.Counter(n.name+".cq_events", "MSIs", "completion events raised (MSIs of armed completion queues)")
		n.stCQArms = st.Counter(n.name+".cq_arms", "doorbells", "completion queue arm doorbells")
	}
	x := &cq{cfg: c}
	n.cqs[c.CQN] = x
	n.cqOrder = append(n.cqOrder, x)
	return nil
}

// SetRecvCQ makes the CQ cqn the receive completion queue of QP qpn, as if
// the QP had been created with it (the QP must not have received yet).
// Receive completions then carry the QPN in their Value field, as a CQE's
// qp_num, so that one consumer serves many QPs.
func (n *NIC) SetRecvCQ(qpn, cqn uint32) error {
	q, c := n.qps[qpn], n.cqs[cqn]
	switch {
	case q == nil:
		return fmt.Errorf("%s: no QP %d", n.name, qpn)
	case c == nil:
		return fmt.Errorf("%s: no CQ %d", n.name, cqn)
	case q.rcqTail > 0:
		return fmt.Errorf("%s: QP %d has received already", n.name, qpn)
	}
	q.rcq = c
	return nil
}

// CQTail is the number of entries the NIC has written into CQ cqn.
func (n *NIC) CQTail(cqn uint32) uint64 {
	if c := n.cqs[cqn]; c != nil {
		return c.tail
	}
	return 0
}

// arm handles an arm doorbell: ArmNextCompletion | the consumer index.
func (n *NIC) arm(cqn uint32, v uint64, cause sim.TxnID, now sim.Tick) {
	c := n.cqs[cqn]
	if c == nil || v&ArmNextCompletion == 0 {
		return // no such CQ, or a reserved command: ignored
	}
	n.stCQArms.Inc()
	ci := v &^ ArmNextCompletion
	c.armed, c.since, c.timerAt, c.cause = true, 0, 0, cause
	if ci < c.tail {
		c.since = int(min(c.tail-ci, uint64(c.cfg.Size)))
	}
	n.moderate(c, now)
}

// completed counts an entry just written into c and raises the event when
// the moderation allows. The MSI is queued behind the entry's MWr, so
// posted-write ordering puts the entry in memory first.
func (n *NIC) completed(c *cq, now sim.Tick, cause sim.TxnID) {
	c.tail++
	if !c.armed {
		return
	}
	c.since++
	if c.since == 1 {
		c.cause = cause // the event is caused by the first completion it reports
	}
	n.moderate(c, now)
}

// moderate raises the armed c's event once Count entries are counted, and
// otherwise starts the period with the first.
func (n *NIC) moderate(c *cq, now sim.Tick) {
	if c.since == 0 {
		return
	}
	if c.since >= c.cfg.Moderation.Count {
		n.raise(c)
		return
	}
	if c.timerAt == 0 && c.cfg.Moderation.PeriodPS > 0 {
		c.timerAt = now + c.cfg.Moderation.PeriodPS
		n.u.WakeAt(c.timerAt)
	}
}

// raise sends c's MSI and disarms it (events are one-shot).
func (n *NIC) raise(c *cq) {
	c.armed, c.since, c.timerAt = false, 0, 0
	n.stCQEvents.Inc()
	tx := n.u.Engine().NewTxn(c.cause, "tlp.MWr.msi", n.name)
	n.sendTLP(tlp.NewMSI(n.spec.ID, c.cfg.MSIAddr, c.cfg.MSIData), tx)
}

// cqTimers raises the events whose moderation period has ended.
func (n *NIC) cqTimers(now sim.Tick) {
	for _, c := range n.cqOrder {
		if c.timerAt != 0 && now >= c.timerAt {
			n.raise(c)
		}
	}
}

// nextCQTimer is when the earliest running moderation period ends.
func (n *NIC) nextCQTimer() sim.Tick {
	next := sim.Never
	for _, c := range n.cqOrder {
		if c.timerAt != 0 {
			next = min(next, c.timerAt)
		}
	}
	return next
}
