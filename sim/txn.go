package sim

import "strconv"

// TxnID identifies one transaction (a TLP, a frame, a CPU call) for the whole
// run. Zero means "none": a transaction with Cause 0 was started by a workload.
//
// Each domain of a world allocates from its own space: the domain's index
// in the top bits (TxnDomainShift), a count from 1 in the others. Domain 0
// (NewEngine's only domain) allocates 1, 2, 3, …; domain 1 allocates
// 1<<48+1, …. An ID therefore depends on the domain and on the order of
// allocations inside it, never on how domains are spread over goroutines.
type TxnID uint64

// TxnDomainShift is the bit position of the domain index in a TxnID.
const TxnDomainShift = 48

// Domain is the index of the domain that allocated the ID.
func (id TxnID) Domain() int { return int(id >> TxnDomainShift) }

// String writes an ID as people read it: the count alone for domain 0,
// "domain.count" for the others ("3.17": the 17th transaction of domain 3).
func (id TxnID) String() string {
	d, n := id.Domain(), uint64(id&(1<<TxnDomainShift-1))
	if d == 0 {
		return strconv.FormatUint(n, 10)
	}
	return strconv.Itoa(d) + "." + strconv.FormatUint(n, 10)
}

// Txn is the causal identity that every transaction type embeds: its own ID
// and the ID of the transaction that caused it. Following Cause links walks
// one operation end to end (CPU call → doorbell → DMA read → frame → TLP →
// IOMMU decision → log record).
type Txn struct {
	ID    TxnID
	Cause TxnID
}

// TxnInfo lets generic code (channel tracing, scoreboards) read the identity
// of any type that embeds Txn.
func (t Txn) TxnInfo() Txn { return t }

// Transaction is implemented by every type that embeds Txn.
type Transaction interface{ TxnInfo() Txn }

// TxnRecord is what the optional transaction log keeps about one transaction.
type TxnRecord struct {
	ID    TxnID  `json:"id"`
	Cause TxnID  `json:"cause,omitempty"`
	Kind  string `json:"kind"`
	By    string `json:"by"`
	At    Tick   `json:"at_ps"`
	// Op marks an operation a process started (a put, an insert): the
	// roots `aaemu trace` counts.
	Op bool `json:"op,omitempty"`
}

// NewTxn allocates the next transaction ID, caused by cause (0 for none).
// kind and by name the transaction and the block that made it; they are kept
// only when a transaction log is enabled, so the call is cheap otherwise.
func (e *Engine) NewTxn(cause TxnID, kind, by string) Txn {
	e.lastTxn++
	t := Txn{ID: e.lastTxn, Cause: cause}
	if e.txnLog != nil {
		e.txnLog = append(e.txnLog, TxnRecord{ID: t.ID, Cause: cause, Kind: kind, By: by, At: e.now})
	}
	return t
}

// NewOp allocates the transaction of an operation that a process (by)
// starts: it has no cause, and the log marks it as an operation.
func (e *Engine) NewOp(kind, by string) Txn {
	t := e.NewTxn(0, kind, by)
	if e.txnLog != nil {
		e.txnLog[len(e.txnLog)-1].Op = true
	}
	return t
}

// Transactions returns how many transactions the domain has allocated.
func (e *Engine) Transactions() uint64 { return uint64(e.lastTxn - e.txnBase) }

// EnableTxnLog starts recording every transaction allocated from now on, in
// every domain of the engine's world.
func (e *Engine) EnableTxnLog() { e.w.EnableTxnLog() }

func (e *Engine) enableTxnLog() {
	if e.txnLog == nil {
		e.txnLog = make([]TxnRecord, 0, 1024)
	}
}

// TxnLogEnabled reports whether transactions are being recorded: models
// that create transactions only for the log (a decision, a handler run)
// check it first.
func (e *Engine) TxnLogEnabled() bool { return e.txnLog != nil }

// TxnLog returns the recorded transactions of the whole world (see
// World.TxnLog): with one domain, in allocation order.
func (e *Engine) TxnLog() []TxnRecord { return e.w.TxnLog() }

// DomainTxnLog returns the transactions the domain recorded, in allocation
// order.
func (e *Engine) DomainTxnLog() []TxnRecord { return e.txnLog }

// Lineage returns the chain of recorded transactions from id back to the
// transaction that started it (id first), across the domains of the world.
func (e *Engine) Lineage(id TxnID) []TxnRecord { return e.w.Lineage(id) }

func (e *Engine) findTxn(id TxnID) (TxnRecord, bool) {
	log := e.txnLog
	if len(log) == 0 {
		return TxnRecord{}, false
	}
	// Fast path: the log started with ID log[0].ID and is dense.
	if i := int(id) - int(log[0].ID); i >= 0 && i < len(log) && log[i].ID == id {
		return log[i], true
	}
	return TxnRecord{}, false
}
