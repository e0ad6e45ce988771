package nic

import (
	"encoding/binary"
	"fmt"

	"github.com/aaemu/aaemu/sim"
)

// DescSize is a legacy descriptor of the Intel 8254x (e1000) family: 16
// bytes, transmit and receive alike (8254x Software Developer's Manual,
// 3.2.3 receive descriptor: buffer address 8, length 2, checksum 2,
// status 1, errors 1, special 2; 3.3.3 transmit descriptor: buffer
// address 8, length 2, CSO, CMD, STA, CSS, special).
const DescSize = 16

// Descriptors are the descriptor rings of a NIC that moves every packet
// the way an e1000 does (Spec.Descriptors): per packet sent, the
// transmit descriptor is read from host memory and written back with its
// status (DD); per packet received, a receive descriptor is read and
// written back with the length and status (DD, EOP) after the packet's
// data. The rings hold Entries descriptors each, in host memory the NIC
// may DMA (registered for it).
type Descriptors struct {
	TX, RX  uint64 // the rings' bases (16-byte aligned)
	Entries int    // descriptors a ring: a multiple of 8 (the ring's length is a multiple of 128 bytes), 8..65536
}

// Validate checks the rings.
func (d *Descriptors) Validate() error {
	if d.Entries < 8 || d.Entries > 65536 || d.Entries%8 != 0 || d.TX%DescSize != 0 || d.RX%DescSize != 0 {
		return fmt.Errorf("descriptor rings: %d entries at %#x and %#x (want a multiple of 8 in 8..65536, 16-byte aligned)", d.Entries, d.TX, d.RX)
	}
	return nil
}

// descState is the NIC's side of the rings: the next descriptor of each
// and the fetches waiting for a tag.
type descState struct {
	d             Descriptors
	tx, rx        uint64 // descriptors used so far (mod Entries: the ring slot)
	waiting       []uint64
	stFetch, stWB *sim.Counter
	stFetchWaited *sim.Counter
}

func (n *NIC) newDescState() {
	d := n.spec.Descriptors
	if d == nil {
		return
	}
	st := n.u.Engine().Stats()
	c := func(s, unit, desc string) *sim.Counter { return st.Counter(n.name+"."+s, unit, desc) }
	n.desc = &descState{d: *d,
		stFetch:       c("desc_fetches", "descriptors", "transmit and receive descriptors read from the host's rings (16 bytes each)"),
		stWB:          c("desc_writebacks", "descriptors", "descriptors written back with their status (16 bytes each)"),
		stFetchWaited: c("desc_fetch_waits", "descriptors", "descriptor reads that waited for a free tag"),
	}
}

// txPacket and rxPacket are a packet's descriptor work: the read of its
// descriptor, then (after its data, for a received one: the TLPs leave in
// order) the write-back.
func (n *NIC) txPacket(f *Frame) { n.descPacket(n.desc.d.TX, &n.desc.tx, f.Len(), 0x1, f.ID) }
func (n *NIC) rxPacket(f *Frame) {
	n.descPacket(n.desc.d.RX, &n.desc.rx, f.Len(), 0x3, f.ID) // DD | EOP
}

func (n *NIC) descPacket(ring uint64, next *uint64, length int, status byte, cause sim.TxnID) {
	ds := n.desc
	addr := ring + (*next%uint64(ds.d.Entries))*DescSize
	*next++
	ds.waiting = append(ds.waiting, addr)
	n.descFetches(cause)
	// The write-back: the packet's length and the status; the buffer
	// address, which the driver wrote, is not the NIC's to change (the
	// model keeps no packet buffers: zero).
	b := make([]byte, DescSize)
	binary.LittleEndian.PutUint16(b[8:], uint16(length))
	b[12] = status
	n.dmaWrite(addr, b, cause)
	ds.stWB.Inc()
}

// descFetches issues the descriptor reads a free tag allows. A read that
// waits for a tag goes after its write-back (counted: desc_fetch_waits;
// the costs on the link are the same, the order is not the device's).
func (n *NIC) descFetches(cause sim.TxnID) {
	ds := n.desc
	for len(ds.waiting) > 0 {
		if !n.dmaRead(ds.waiting[0], DescSize, dmaPurpose{kind: fetchDesc, txn: n.u.Engine().NewTxn(cause, "desc", n.name)}) {
			ds.stFetchWaited.Inc()
			return
		}
		ds.waiting = ds.waiting[1:]
		ds.stFetch.Inc()
	}
}
