package am2

import (
	"fmt"
	"strconv"
	"strings"
)

// Protocols is which of the two protocols a system runs.
type Protocols int

// The systems of seed 000's Table 2: both protocols (the multi-protocol
// layer), or one of them alone (the single-protocol layers it is compared
// with).
const (
	Multi   Protocols = iota // shared memory inside a node, the network between nodes
	ShmOnly                  // shared memory only: no network polls; a send to another node is an error
	NetOnly                  // the network only: no shared-memory polls; a send inside a node is an error
)

func (p Protocols) String() string {
	switch p {
	case ShmOnly:
		return "shm-only"
	case NetOnly:
		return "net-only"
	}
	return "multi"
}

// Adaptive polling's bounds and history (seed 000 L112–L114, L121).
const (
	AdaptiveMin  = 8  // at most one poll in 8 polls the network
	AdaptiveMax  = 32 // at least one in 32 does
	AdaptiveHist = 32 // network polls the history counts messages over
)

// Policy is when a poll also polls the network (seed 000 L110–L114). Every
// send polls; a multi-protocol poll always looks at the shared-memory
// queues and every Every-th poll at the network, which may then take up
// to Every times what a shared-memory poll takes (fractional polling:
// Every × Spec.Slots messages). Every = 0 is the adaptive policy:
//
//	m = messages the last AdaptiveHist network polls took
//	Every = clamp(⌈AdaptiveHist / max(m, 1)⌉, AdaptiveMin, AdaptiveMax)
//
// so a network that brought a message in every poll is polled every 8th
// time, a quiet one every 32nd: the history predicts how many polls apart
// the next message is. The seed states the bounds and that the history is
// the last 32 polls' messages, not the mapping; this one is aaemu's.
type Policy struct {
	Protocols Protocols
	Every     int // multi: the network polled every Every-th poll (1..AdaptiveMax·8); 0: adaptive
}

// Validate checks the policy.
func (p Policy) Validate() error {
	switch {
	case p.Protocols < Multi || p.Protocols > NetOnly:
		return fmt.Errorf("am2: protocols %d, want multi, shm-only or net-only", p.Protocols)
	case p.Every < 0 || p.Every > 256:
		return fmt.Errorf("am2: network polled every %d polls, want 0 (adaptive) or 1..256", p.Every)
	}
	return nil
}

func (p Policy) String() string {
	switch {
	case p.Protocols != Multi:
		return p.Protocols.String()
	case p.Every == 0:
		return "adaptive"
	}
	return fmt.Sprintf("1/%d", p.Every)
}

// ParsePolicy reads a policy: adaptive, 1/k (a fixed fraction), shm-only
// or net-only.
func ParsePolicy(s string) (Policy, error) {
	switch s {
	case "adaptive", "":
		return Policy{}, nil
	case "shm-only":
		return Policy{Protocols: ShmOnly}, nil
	case "net-only":
		return Policy{Protocols: NetOnly}, nil
	}
	if k, ok := strings.CutPrefix(s, "1/"); ok {
		if n, err := strconv.Atoi(k); err == nil && n >= 1 && n <= 256 {
			return Policy{Every: n}, nil
		}
	}
	return Policy{}, fmt.Errorf("polling policy %q: want adaptive, 1/k (k in 1..256), shm-only or net-only", s)
}

// poller is an endpoint's polling state: the polls so far, the interval
// and the adaptive history (a ring of the messages each network poll took).
type poller struct {
	since int // polls since the last network poll
	every int
	hist  [AdaptiveHist]int
	at    int
	sum   int
}

// due counts a poll and reports whether it polls the network.
func (q *poller) due(p Policy) bool {
	switch {
	case p.Protocols == ShmOnly:
		return false
	case p.Protocols == NetOnly:
		return true
	case p.Every > 0:
		q.every = p.Every
	case q.every == 0:
		q.every = AdaptiveMax // no history yet: a quiet network
	}
	if q.since++; q.since < q.every {
		return false
	}
	q.since = 0
	return true
}

// took records what a network poll took and, adaptive, sets the interval.
func (q *poller) took(p Policy, n int) {
	q.sum += n - q.hist[q.at]
	q.hist[q.at] = n
	q.at = (q.at + 1) % AdaptiveHist
	if p.Protocols == Multi && p.Every == 0 {
		m := max(q.sum, 1)
		q.every = min(max((AdaptiveHist+m-1)/m, AdaptiveMin), AdaptiveMax)
	}
}

// budget is the network messages a poll may take: Every × Slots (Every 1
// for a network-only system).
func (q *poller) budget(p Policy, slots int) int {
	if p.Protocols == NetOnly {
		return slots
	}
	return max(q.every, 1) * slots
}
