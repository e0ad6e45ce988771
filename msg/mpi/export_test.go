package mpi

import "github.com/aaemu/aaemu/cpu"

// NIULock is the StarT-X channel device's NIU lock at addr, for tests.
type NIULock struct{ l niuLock }

// NewNIULock is the lock whose two words start at addr (one line).
func NewNIULock(addr uint64) NIULock { return NIULock{niuLock(addr)} }

// Acquire waits for the lock and returns the caller's ticket.
func (l NIULock) Acquire(p *cpu.Proc) uint64 { return l.l.acquire(p) }

// Release passes the lock on.
func (l NIULock) Release(p *cpu.Proc, t uint64) { l.l.release(p, t) }
