// Package sim is aaemu's simulation kernel: the primitives every cycle-level
// hardware block is built from.
//
// # Time
//
// Time is an integer number of picoseconds (Tick). Floating-point time makes
// runs drift and differ between machines, so none is used anywhere. A Clock is
// a clock domain with an integer period and phase; blocks belong to exactly one
// Clock and are evaluated on its rising edges.
//
// # One time step
//
// At every time t that has work, the Engine
//
//  1. collects the units due at t from every clock whose edge falls on t,
//  2. evaluates them (Block.Tick): a block reads the current value of
//     registers (Reg.Q) and channel heads, and writes next values (Reg.D) or
//     sends on channels,
//  3. commits every written register at once: that is the clock edge.
//
// Nothing a block does in step 2 is visible to another block before step 3,
// and a value sent on a channel is visible to its consumer only at an edge
// strictly after t. The order in which blocks are evaluated inside a time step
// therefore cannot change the result; a test in this package evaluates the same
// design in two orders and compares the traces.
//
// # Channels (valid/ready)
//
// Chan carries transactions between blocks through a bounded FIFO. The four
// stream rules (as Amaranth writes them down) hold by construction:
// a transfer happens when the consumer sees valid and takes the head; once an
// item is valid it stays valid with the same payload until taken; valid never
// waits on ready; ready may depend on valid. Backpressure is the FIFO filling
// up: the producer's Ready turns false and it must hold its transaction. A
// pop frees space that the producer sees from the next edge on, so a channel
// needs a depth of 2 to sustain one transfer per cycle (a skid buffer), exactly
// as a registered-ready FIFO in RTL does.
//
// # Idle skipping
//
// A block's Tick returns whether it wants to be evaluated on the next edge.
// A block that returns false sleeps and costs nothing until a channel
// delivers to it, a channel it was blocked on frees space, a register of its
// own changed value, or a timer it set with Unit.WakeAt fires. A test checks
// that idle skipping gives the same traces as evaluating every block on every
// edge (Engine option NoIdleSkip).
//
// # Tracing
//
// Registers, channels and probes declare their signals once; an external
// Tracer (the VCD writer in package waveforms) is attached from outside with
// Engine.AttachTracer. When no tracer is attached the per-cycle paths pay one
// nil check.
package sim
