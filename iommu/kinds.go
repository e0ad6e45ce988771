package iommu

import (
	"fmt"

	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/sim"
)

// Page kinds: a label per 4 KB page that whoever maps the page gives with
// it (Driver.Label), for the statistics only. The IOMMU does not know what
// a label means: with Spec.IOTLBByKind it counts its IOTLB's hits and
// misses by the label of the page looked up (unlabelled pages under
// "other"); with Spec.IOTLBOnly only the pages of that label use the
// IOTLB, the others are translated outside it at no cost and counted
// nowhere, a model of an IOTLB that saw only some pages' accesses.
type pageKinds struct {
	names        []string
	index        map[string]uint8
	page         map[tlbKey]uint8 // 0: unlabelled
	hits, misses []*sim.Counter
	only         uint8 // IOTLBOnly's label (0: every page uses the IOTLB)
	stats        *sim.Stats
	prefix       string
}

// maxKinds bounds the labels (a small label: a byte, 0 the unlabelled).
const maxKinds = 255

func (m *IOMMU) newPageKinds(name string, st *sim.Stats) {
	if !m.spec.IOTLBByKind && m.spec.IOTLBOnly == "" {
		return
	}
	k := &pageKinds{index: map[string]uint8{}, page: map[tlbKey]uint8{}, stats: st, prefix: name + ".iotlb.kind."}
	m.kinds = k
	k.intern("other")
	if m.spec.IOTLBOnly != "" {
		k.only = k.intern(m.spec.IOTLBOnly)
	}
}

// intern gives a label its index and counters.
func (k *pageKinds) intern(name string) uint8 {
	if i, ok := k.index[name]; ok {
		return i
	}
	i := uint8(len(k.names))
	k.names = append(k.names, name)
	k.index[name] = i
	k.hits = append(k.hits, k.stats.Counter(k.prefix+name+".hits", "lookups", "IOTLB hits on pages labelled "+name))
	k.misses = append(k.misses, k.stats.Counter(k.prefix+name+".misses", "lookups", "IOTLB misses on pages labelled "+name))
	return i
}

func (k *pageKinds) of(key tlbKey) uint8 { return k.page[key] }

// count counts a lookup of key's page.
func (k *pageKinds) count(key tlbKey, hit bool) {
	if hit {
		k.hits[k.of(key)].Inc()
	} else {
		k.misses[k.of(key)].Inc()
	}
}

// bypasses says whether key's page is translated outside the IOTLB
// (IOTLBOnly, another label).
func (k *pageKinds) bypasses(key tlbKey) bool { return k.only != 0 && k.of(key) != k.only }

// Label gives the 4 KB pages of [iova, iova+size) in domain did the label
// kind, for the IOMMU's statistics (a later label replaces an earlier
// one). Without Spec.IOTLBByKind or IOTLBOnly it does nothing.
func (d *Driver) Label(did uint16, iova, size uint64, kind string) error {
	k := d.mmu.kinds
	if k == nil {
		return nil
	}
	if kind == "" || len(kind) > 32 {
		return fmt.Errorf("label %q: want 1..32 characters", kind)
	}
	if _, ok := k.index[kind]; !ok && len(k.names) >= maxKinds {
		return fmt.Errorf("label %q: the IOMMU counts at most %d labels", kind, maxKinds-1)
	}
	i := k.intern(kind)
	for vpn := iova >> 12; vpn < (iova+size+0xfff)>>12; vpn++ {
		k.page[makeTLBKey(did, vpn)] = i
	}
	return nil
}

// outside translates key's page without the IOTLB (IOTLBOnly): the
// tables' entry, read at no cost.
func (m *IOMMU) outside(tr *translation, c *ctxEntry, iova uint64, write bool) {
	leaf, r, w, level, fault := m.peekTranslation(c, iova&^0xfff)
	if fault != 0 {
		if fault == FRRead && write {
			fault = FRWrite
		}
		tr.fault = fault
		return
	}
	size := pte.PageSize(level)
	tr.tlbHit = true
	tr.pa, tr.leaf, tr.r, tr.w, tr.level = leaf&pte.AddrMask&^(size-1)|iova&(size-1), leaf, r, w, level
}
