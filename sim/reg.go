package sim

import "fmt"

// committer is a register waiting for the clock edge.
type committer interface{ commit(t Tick) }

// Reg is a clocked register: Q is the value this cycle; D sets the value it
// takes at the next edge. Every written register commits at the end of the
// time step, so the order in which blocks run cannot change what they read.
type Reg[T comparable] struct {
	cur, next T
	written   bool
	owner     *Unit
	sig       *signal
	enc       func(T) uint64
}

// NewReg declares a register of unit u. Integer and boolean registers are
// traced automatically with their natural width; use NewRegTraced for others
// or another width.
func NewReg[T comparable](u *Unit, name string, init T) *Reg[T] {
	r := &Reg[T]{cur: init, next: init, owner: u}
	if _, w, ok := bitsOf(init); ok {
		r.enc = func(v T) uint64 { b, _, _ := bitsOf(v); return b }
		r.sig = u.eng.declare(u.name+"."+name, w, r.traceValue)
	}
	return r
}

// NewRegTraced declares a register traced as width bits through enc.
func NewRegTraced[T comparable](u *Unit, name string, init T, width int, enc func(T) uint64) *Reg[T] {
	if enc == nil {
		panic(fmt.Sprintf("sim: register %s.%s: nil encoder", u.name, name))
	}
	r := &Reg[T]{cur: init, next: init, owner: u, enc: enc}
	r.sig = u.eng.declare(u.name+"."+name, width, r.traceValue)
	return r
}

func (r *Reg[T]) traceValue() (uint64, bool) { return r.enc(r.cur) & mask(r.sig.width), true }

func mask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<uint(w) - 1
}

// Q is the register's value in this cycle.
func (r *Reg[T]) Q() T { return r.cur }

// D sets the value the register takes at the next clock edge. The last D of
// a cycle wins, as in a procedural RTL block.
func (r *Reg[T]) D(v T) {
	r.next = v
	if !r.written {
		r.written = true
		r.owner.eng.dirty = append(r.owner.eng.dirty, r)
	}
}

// Next is the value written for the next edge (Q if none was written).
func (r *Reg[T]) Next() T { return r.next }

func (r *Reg[T]) commit(t Tick) {
	r.written = false
	if r.next == r.cur {
		return
	}
	r.cur = r.next
	// A block whose state changed is evaluated on the next edge, so that a
	// block cannot fall asleep on a state it has not looked at yet.
	r.owner.wake(t + 1)
	if traceHooks && r.sig != nil && r.sig.on {
		e := r.owner.eng
		e.tr.Set(uint64(t), r.sig.id, r.enc(r.cur)&mask(r.sig.width))
	}
}
