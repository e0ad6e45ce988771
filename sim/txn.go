package sim

// TxnID identifies one transaction (a TLP, a frame, a CPU call) for the whole
// run. Zero means "none": a transaction with Cause 0 was started by a workload.
type TxnID uint64

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

// Transactions returns how many transactions have been allocated.
func (e *Engine) Transactions() uint64 { return uint64(e.lastTxn) }

// EnableTxnLog starts recording every transaction allocated from now on.
func (e *Engine) EnableTxnLog() {
	if e.txnLog == nil {
		e.txnLog = make([]TxnRecord, 0, 1024)
	}
}

// TxnLogEnabled reports whether transactions are being recorded: models
// that create transactions only for the log (a decision, a handler run)
// check it first.
func (e *Engine) TxnLogEnabled() bool { return e.txnLog != nil }

// TxnLog returns the recorded transactions in allocation order.
func (e *Engine) TxnLog() []TxnRecord { return e.txnLog }

// Lineage returns the chain of recorded transactions from id back to the
// transaction that started it (id first). IDs are allocated densely, so the
// log is indexed directly when it was enabled from the start.
func (e *Engine) Lineage(id TxnID) []TxnRecord {
	var out []TxnRecord
	for id != 0 {
		r, ok := e.findTxn(id)
		if !ok {
			break
		}
		out = append(out, r)
		id = r.Cause
	}
	return out
}

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
