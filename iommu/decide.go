package iommu

import "github.com/aaemu/aaemu/iommu/pte"

// logKind says what the IOMMU records about an access.
type logKind uint8

const (
	logNone logKind = iota
	logMeta
	logMetaData
)

// action is the decision for one access to a present page.
type action struct {
	perform  bool    // write memory / return data
	log      logKind // what is recorded
	toAccess bool    // to the IUID's access log (E=1); else to the fault log, metadata only
}

// decideWrite is DESIGN.md §2.2:
//
//	W WL WLD | memory  record
//	1 0  0   | written none
//	1 1  0   | written metadata
//	1 x  1   | written metadata + data (E=0: metadata to the fault log)
//	0 0  0   | blocked none (silently discarded)
//	0 1  0   | blocked metadata (a standard fault)
//	0 x  1   | blocked metadata + data: the active put (E=0: metadata to the fault log)
func decideWrite(leaf uint64, w bool) action {
	a := action{perform: w, toAccess: leaf&pte.E != 0}
	switch {
	case leaf&pte.WLD != 0:
		a.log = logMetaData
	case leaf&pte.WL != 0:
		a.log = logMeta
	}
	if !a.toAccess && a.log == logMetaData {
		a.log = logMeta // the fault log never carries data
	}
	return a
}

// decideRead is DESIGN.md §2.3. RLD implies RL (as WLD implies WL): with
// R=0 there is no data, so either bit records metadata only.
//
//	R RL RLD | data            record
//	1 0  0   | returned        none
//	1 1  0   | returned        metadata
//	1 x  1   | returned        metadata + a copy of the data: the active get
//	0 0  0   | UR completion   none
//	0 1  x   | UR completion   metadata (a fault)
func decideRead(leaf uint64, r bool) action {
	a := action{perform: r, toAccess: leaf&pte.E != 0}
	switch {
	case r && leaf&pte.RLD != 0:
		a.log = logMetaData
	case leaf&(pte.RL|pte.RLD) != 0:
		a.log = logMeta
	}
	if !a.toAccess && a.log == logMetaData {
		a.log = logMeta
	}
	return a
}

// decideAtomic: AtomicOps need R and W; without both they are blocked
// (UR) and logged by the write bits (WL: metadata, WLD: metadata + operands).
func decideAtomic(leaf uint64, r, w bool) action {
	a := decideWrite(leaf, r && w)
	return a
}
