package verify

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/iommu/record"
	"github.com/aaemu/aaemu/pcie/tlp"
)

// Coverage counts named bins over many runs.
type Coverage struct {
	bins map[string]int
}

// NewCoverage returns a coverage table with every bin the design can reach
// declared at zero, so bins never hit show up.
func NewCoverage() *Coverage {
	c := &Coverage{bins: map[string]int{}}
	for _, b := range AllBins() {
		c.bins[b] = 0
	}
	return c
}

var (
	opNames   = []string{"put", "get", "atomic"}
	permNames = []string{"allowed", "denied"}
	logNames  = []string{"none", "meta", "meta+data"}
	sizeNames = []string{"1-3B", "4-63B", "64-511B", "512-4095B", "4KB", "0B"}
)

// AllBins lists every reachable bin.
func AllBins() []string {
	var out []string
	for _, op := range opNames {
		for _, p := range permNames {
			for _, l := range logNames {
				for _, e := range []string{"E0", "E1"} {
					out = append(out, fmt.Sprintf("decision/%s/%s/%s/%s", op, p, l, e))
				}
			}
		}
		out = append(out, "decision/"+op+"/not-present")
		if op != "atomic" { // AtomicOps are 4 or 8 bytes, naturally aligned
			for _, s := range sizeNames {
				out = append(out, "size/"+op+"/"+s)
			}
			out = append(out, "align/"+op+"/dw-aligned", "align/"+op+"/unaligned")
		}
	}
	for _, m := range []string{"Poll", "Int", "SP"} {
		out = append(out, "notify/"+m)
	}
	for _, fr := range []uint8{frRootNotPresent, frCtxNotPresent, frWrite, frRead, frLoggedWrite, frLoggedRead, frNoLog, frTooLarge} {
		out = append(out, fmt.Sprintf("fault/%#x", fr))
	}
	out = append(out, "fault/overflow", "interleave/devices", "overflow/log-full", "wrap/pad", "wrap/skip",
		"flush/waited", "flush/immediate", "records/with-data", "records/blocked")
	for _, k := range []string{"setbits", "unmap", "map", "split", "merge", "detach", "attach"} {
		out = append(out, "change/"+k+"/stale")
	}
	out = append(out, "change/split/1GB/stale", "change/domain2/stale", "change/domain2/same-iova")
	out = append(out, "change/unregister/no-log", "change/register/records", "change/register/Int/records", "change/register/SP/records",
		"change/unregister/flush", "change/register/flush-waited",
		"change/clearfaults/event-again", "change/clearfaults/overflow-cleared", "change/clearfaults/in-flight",
		"change/racing/in-flight", "change/racing/in-flight/same-page",
		"change/racing/split/in-flight", "change/racing/merge/in-flight", "change/racing/detach/in-flight", "change/racing/attach/in-flight",
		"iuid/0", "iuid/1023", "iuid/other",
		"page/2MB/allowed", "page/2MB/denied", "page/1GB/allowed", "page/1GB/denied", "domain/same-iova")
	return out
}

func sizeClass(n int) string {
	switch {
	case n == 0:
		return sizeNames[5] // a zero-length request: one DW, no byte enabled
	case n < 4:
		return sizeNames[0]
	case n < 64:
		return sizeNames[1]
	case n < 512:
		return sizeNames[2]
	case n < 4096:
		return sizeNames[3]
	}
	return sizeNames[4]
}

// Add counts the bins one run hit.
func (c *Coverage) Add(s *Stimulus, o *Observation) {
	hit := map[string]bool{}
	doms := map[uint16]map[uint64]*Page{1: {}, 2: {}}
	for _, p := range s.Pages {
		pg := p
		doms[pg.Dom()][p.IOVA] = &pg
	}
	// IOVAs mapped in both domains that devices of each accessed.
	used := map[uint16]map[uint64]bool{1: {}, 2: {}}
	devices := append([]Device(nil), s.Devices...)
	buses := map[uint8]bool{}
	next := 0
	for i, op := range s.Ops {
		for ; next < len(s.Changes) && s.Changes[next].After <= i; next++ {
			applyChange(s.Changes[next], doms, devices, buses)
		}
		t := op.TLP
		name := "put"
		switch {
		case t.Kind == tlp.MRd:
			name = "get"
		case t.Kind == tlp.FetchAdd || t.Kind == tlp.CAS || t.Kind == tlp.Swap:
			name = "atomic"
		}
		first, n := span(&t)
		if name != "atomic" {
			hit["size/"+name+"/"+sizeClass(n)] = true
			if first&3 == 0 && n%4 == 0 {
				hit["align/"+name+"/dw-aligned"] = true
			} else {
				hit["align/"+name+"/unaligned"] = true
			}
		}
		dom := devices[op.Dev].Dom()
		pg := pageOf(doms[dom], t.Addr)
		if !devices[op.Dev].Attached {
			continue
		}
		if pg == nil || !pg.Mapped {
			hit["decision/"+name+"/not-present"] = true
			continue
		}
		b := pg.Bits
		allowed := b&pte.W != 0
		meta, data := b&(pte.WL|pte.WLD) != 0, b&pte.WLD != 0
		switch name {
		case "get":
			allowed = b&pte.R != 0
			meta, data = b&(pte.RL|pte.RLD) != 0, b&pte.RLD != 0
		case "atomic":
			allowed = b&pte.R != 0 && b&pte.W != 0
		}
		perm, lg, e := "allowed", "none", "E0"
		if !allowed {
			perm = "denied"
		}
		if data {
			lg = "meta+data"
		} else if meta {
			lg = "meta"
		}
		if b&pte.E != 0 {
			e = "E1"
		}
		hit[fmt.Sprintf("decision/%s/%s/%s/%s", name, perm, lg, e)] = true
		if other := doms[3-dom][pg.IOVA]; other != nil && other.Mapped && pg.Bytes() == 4096 {
			used[dom][pg.IOVA] = true
			if used[3-dom][pg.IOVA] {
				hit["domain/same-iova"] = true
			}
		}
		if size := pg.Bytes(); size != 4096 {
			hit[fmt.Sprintf("page/%s/%s", map[uint64]string{Page2M: "2MB", Page1G: "1GB"}[size], perm)] = true
		}
	}
	// A driver call whose page (or device) TLPs used before it and after
	// it: the IOTLB or the context cache held an entry it made stale. Of
	// a page's, the TLPs of the page's domain; a call on domain 2's page
	// that domain 1's devices reached at the same IOVA after it too.
	for _, ch := range s.Changes {
		var size uint64 = 4096
		if pg := doms[ch.Dom()][ch.IOVA]; pg != nil {
			size = pg.Bytes()
		}
		in := func(op Op) bool { return op.TLP.Addr >= ch.IOVA && op.TLP.Addr < ch.IOVA+size }
		uses := func(op Op) bool {
			if ch.Kind == "attach" || ch.Kind == "detach" {
				return op.Dev == ch.Dev
			}
			return in(op) && s.Devices[op.Dev].Dom() == ch.Dom()
		}
		before, after, other := false, false, false
		for i, op := range s.Ops {
			if uses(op) {
				before, after = before || i < ch.After, after || i >= ch.After
			}
			other = other || i >= ch.After && in(op) && s.Devices[op.Dev].Dom() != ch.Dom()
		}
		if !before || !after {
			continue
		}
		hit["change/"+ch.Kind+"/stale"] = true
		if ch.Kind == "split" && size == Page1G {
			hit["change/split/1GB/stale"] = true
		}
		if ch.Dom() == 2 && ch.Kind != "attach" && ch.Kind != "detach" {
			hit["change/domain2/stale"] = true
			if pg := doms[1][ch.IOVA]; other && pg != nil && pg.Mapped {
				hit["change/domain2/same-iova"] = true
			}
		}
	}
	modes := map[uint16]string{}
	for _, l := range s.Logs {
		modes[l.IUID] = []string{"Poll", "Int", "SP"}[l.Mode%3]
	}
	for iuid, recs := range o.Logs {
		for _, r := range recs {
			if r.Kind == record.Pad {
				hit["wrap/pad"] = true
				continue
			}
			hit["notify/"+modes[iuid]] = true
			if r.DataLen > 0 {
				hit["records/with-data"] = true
			}
			if r.Flags&record.FlagBlocked != 0 {
				hit["records/blocked"] = true
			}
		}
	}
	for _, f := range o.Faults {
		hit[fmt.Sprintf("fault/%#x", f.FR)] = true
	}
	if o.Overflow {
		hit["fault/overflow"] = true
	}
	if o.LogFull {
		hit["overflow/log-full"] = true
	}
	if o.Skipped {
		hit["wrap/skip"] = true
	}
	for i := 1; i < len(o.Accepted); i++ {
		if s.Ops[o.Accepted[i]].Dev != s.Ops[o.Accepted[i-1]].Dev {
			hit["interleave/devices"] = true
			break
		}
	}
	p := Predict(s, o.Accepted)
	if p.racing() {
		p.placeClears(o, faultEvents(o))
	}
	hit["change/clearfaults/in-flight"] = p.RacedFaults
	// A racing page call with a TLP before it still in flight, taken
	// after it (with the new tables), and such a TLP on the call's page.
	pos := make([]int, len(s.Ops))
	for k, i := range o.Accepted {
		pos[i] = k
	}
	for _, c := range s.Changes {
		if !c.RacesTables() || c.After > len(o.Accepted) {
			continue
		}
		for i := 0; i < c.After-1; i++ {
			if pos[i] > pos[c.After-1] {
				hit["change/racing/in-flight"] = true
				op := s.Ops[i]
				if op.TLP.Addr>>12 == c.IOVA>>12 && s.Devices[op.Dev].Dom() == c.Dom() {
					hit["change/racing/in-flight/same-page"] = true
				}
				// And of each kind that changes more than one page.
				switch c.Kind {
				case "split", "merge", "detach", "attach":
					hit["change/racing/"+c.Kind+"/in-flight"] = true
				}
			}
		}
	}
	hit["change/unregister/no-log"] = p.NoLogAfterRemoval
	hit["change/register/records"] = p.RecordAfterRegister
	hit["change/clearfaults/event-again"] = p.FaultEvents > 1
	hit["change/clearfaults/overflow-cleared"] = p.FaultAfterOverflowCleared
	// Logs that got records, by IUID: the ends of the 10-bit range and
	// the values between.
	for iuid, recs := range o.Logs {
		if len(recs) > 0 {
			switch iuid {
			case 0, maxIUID:
				hit[fmt.Sprintf("iuid/%d", iuid)] = true
			default:
				hit["iuid/other"] = true
			}
		}
	}
	// Int and SP logs registered again that got records (their MSIs and
	// mirrors checked per ring), flushes of a removed log or of one
	// registered again.
	for _, l := range s.Logs {
		ends := p.LogEnds[l.IUID]
		for k := 1; k < len(ends) && l.Mode > 0; k++ {
			if ends[k] > 0 {
				hit["change/register/"+[]string{"", "Int", "SP"}[l.Mode]+"/records"] = true
			}
		}
	}
	for _, f := range p.Flushes {
		if f.Removed {
			hit["change/unregister/flush"] = true
		}
		if f.Since >= 0 && f.Target > 0 {
			hit["change/register/flush-waited"] = true
		}
		if f.Target > 0 {
			hit["flush/waited"] = true
		} else {
			hit["flush/immediate"] = true
		}
	}
	for b, h := range hit {
		if h {
			c.bins[b]++
		}
	}
}

// apiBins are the API level's bins: what the links, the wires and RC went
// through, and what the scoreboard accepted beyond the order of issue.
var apiBins = []struct{ bin, event string }{
	{"api/wire/lost", "lost"},
	{"api/wire/duplicated", "duplicated"},
	{"api/wire/reordered", "reordered"},
	{"api/rc/retransmitted", "retransmissions"},
	{"api/rc/sequence-nak", "naks"},
	{"api/rc/duplicate-received", "duplicates"},
	{"api/pcie/credit-stall/posted-down", "down.credit_stall_posted"},
	{"api/pcie/credit-stall/posted-up", "up.credit_stall_posted"},
	{"api/pcie/credit-stall/nonposted", "credit_stall_nonposted"},
	{"api/iommu/stalled", "stalls"},
	{"api/get/read-again", ""},
	{"api/put/passed-get", ""},
	{"api/log/wrapped", ""},
	{"api/get/refused", ""},
	{"api/flush", ""},
	{"api/notify/int", "log_msis"},
	{"api/notify/int/two-vectors", ""},
	{"api/nics/2/records", ""},
	{"api/nics/2/interleaved", ""},
	{"api/atomic/fadd", ""},
	{"api/atomic/cas/swapped", ""},
	{"api/atomic/cas/kept", ""},
	{"api/atomic/refused", ""},
	{"api/atomic/logged", ""},
	{"api/send", ""},
	{"api/send/logged", ""},
	{"api/send/rnr", "rnr_naks"},
}

// DeclareAPI adds the API level's bins at zero.
func (c *Coverage) DeclareAPI() {
	for _, b := range apiBins {
		c.bins[b.bin] += 0
	}
}

// AddAPI counts the bins an API-level run hit (after CompareAPI, which
// scores it).
func (c *Coverage) AddAPI(s *APIStimulus, p *APIPrediction, o *APIObservation) {
	c.DeclareAPI()
	hit := map[string]bool{
		"api/get/read-again": o.Scored.ReadAgain > 0,
		"api/put/passed-get": o.Scored.PutsPassed > 0,
		"api/log/wrapped":    o.Scored.Wraps > 0,
		"api/get/refused":    len(p.Failed) > 0,
		"api/flush":          len(p.Flushes) > 0,
	}
	ints := 0
	for _, l := range s.Logs {
		if l.Mode == 1 && len(o.Logs[l.IUID]) > 0 {
			ints++
		}
	}
	hit["api/notify/int/two-vectors"] = ints >= 2 // two Int logs' MSIs at one core's address
	for _, l := range o.Logs {
		rails := 0 // the rail changes along the log
		for j, r := range l {
			hit["api/nics/2/records"] = hit["api/nics/2/records"] || r.Requester == APIRequesterOf(1)
			hit["api/atomic/logged"] = hit["api/atomic/logged"] || r.Kind == record.Atomic
			if j > 0 && r.Requester != l[j-1].Requester {
				rails++
			}
		}
		hit["api/nics/2/interleaved"] = hit["api/nics/2/interleaved"] || rails >= 2
	}
	for i, op := range s.Ops {
		_, done := p.Atomics[i]
		switch {
		case op.Kind == "fadd" && done:
			hit["api/atomic/fadd"] = true
		case op.Kind == "cas" && done && p.Atomics[i] == op.Compare:
			hit["api/atomic/cas/swapped"] = true
		case op.Kind == "cas" && done:
			hit["api/atomic/cas/kept"] = true
		case (op.Kind == "fadd" || op.Kind == "cas") && p.Failed[i]:
			hit["api/atomic/refused"] = true
		case op.Kind == "send":
			hit["api/send"] = true
			hit["api/send/logged"] = hit["api/send/logged"] || len(p.Writes[i]) > 0
		}
	}
	for _, b := range apiBins {
		if b.event != "" && o.Events[b.event] > 0 {
			hit[b.bin] = true
		}
	}
	for b, h := range hit {
		if h {
			c.bins[b]++
		}
	}
}

// Merge adds another table's counts.
func (c *Coverage) Merge(d *Coverage) {
	for k, v := range d.bins {
		c.bins[k] += v
	}
}

// Missed lists the bins never hit, sorted.
func (c *Coverage) Missed() []string {
	var out []string
	for k, v := range c.bins {
		if v == 0 {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// Hit is the number of runs that hit bin b.
func (c *Coverage) Hit(b string) int { return c.bins[b] }

// Print writes the table, grouped by cover point, and the bins never hit.
func (c *Coverage) Print(w io.Writer) {
	keys := make([]string, 0, len(c.bins))
	for k := range c.bins {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "bin\truns")
	hit := 0
	for _, k := range keys {
		fmt.Fprintf(tw, "%s\t%d\n", k, c.bins[k])
		if c.bins[k] > 0 {
			hit++
		}
	}
	tw.Flush()
	fmt.Fprintf(w, "%d of %d bins hit\n", hit, len(keys))
	if m := c.Missed(); len(m) > 0 {
		fmt.Fprintf(w, "never hit: %s\n", strings.Join(m, ", "))
	}
}
