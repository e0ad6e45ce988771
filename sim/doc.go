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
// At every time t that has work, an Engine (one domain of a World)
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
//
// # Worlds, domains and links
//
// A World runs one simulation split into domains that may run in parallel,
// with results that do not depend on how many goroutines run them.
//
// The World owns what is global: the seed (Rand derives a component's
// generator from it and the component's name, in whichever domain), the
// registry of names, the statistics, the signal declarations and the
// tracer. World.Domain returns an Engine with a scheduler of its own: its
// time, clocks, units, timers, registers waiting for the edge, step and
// evaluation counts, and transaction IDs. Blocks keep asking their unit's
// Engine for Now, NewTxn, Stats and Rand. NewEngine is a world of one
// domain, which runs exactly as an Engine always has.
//
// The model decides the domains (one per node and one for the network, say);
// a domain is the unit of determinism. Partitions only decides how many
// goroutines run them: contiguous groups of domains of about equal size
// (units), one goroutine per group, reused from window to window; with one
// partition everything runs on the caller's goroutine.
//
// The partitions may also be processes: World.SetComm makes a world run
// over the ranks of a communicator (an MPI job), every rank having built
// the same world and running a contiguous group of domains. Links between
// two ranks carry their items and credits encoded (RegisterCodec) at each
// barrier, in the round that agrees the next time; outputs (traced
// changes, Sink records) merge on rank 0; World.Sync makes counts,
// statistics, transaction logs and kept Go state (Engine.Keep) the same on
// every rank after a run.
//
// Clock names belong to their domain: every node's domain may have a
// "clk_fabric". Reports show a clock under its Path, the domain's name and
// the clock's ("node3.clk_fabric"). Every other name (units, channels,
// links, statistics, signals) is global and declared once per world.
//
// Domains exchange transactions only through links (NewLink): a Chan in
// link mode, with a latency in picoseconds. An item sent at the producer's
// time t is visible to the consumer from its first edge at or after
// t + latency; a Recv at the consumer's time t frees space the producer sees
// from t + latency on, as credits travelling back. Both hold whether the
// two units share a domain or not. NewChan between units of two domains
// panics: only links cross.
//
// # Windows and lookahead
//
// The lookahead is the smallest latency of the links between two different
// domains (World.Lookahead); the window is the lookahead, or a shorter
// length set with World.SetWindow (a longer one is refused). World.Run
// repeats: T is the earliest time any domain has work at (idle time is
// skipped); every domain runs all its time steps before E = T + window (at
// most the limit); then, at the barrier, the items and credits every link
// carried during the window are handed to the other side. Nothing a domain
// sends in a window can be visible to another before E, so no domain ever
// needs what another has not yet computed; a Send that would be visible
// before E (a window longer than a link's latency) panics.
//
// What keeps the results identical for any partition count, and any window
// up to the lookahead:
//
//   - a domain's behaviour depends only on its own state and on what links
//     deliver, and links deliver items at fixed times;
//   - the events a delivery schedules (waking the consumer, or a producer
//     waiting for credit; tracing the link) carry keys made of the link's
//     number, the item's or credit's number on it and the kind of event, so
//     that a domain evaluates its units in the same order whether a
//     delivery came at this barrier or an earlier one;
//   - the outputs merge in a fixed order: the tracer receives the window's
//     value changes at the barrier ordered by time, domain and the order
//     within the domain; the transaction log (World.TxnLog) merges the
//     domains' logs in the same order; each domain allocates transaction IDs
//     in its own space (domain index in the top bits, so domain 0 counts 1,
//     2, 3, …); counts and statistics are sums over domains or belong to
//     one;
//   - Stop, from any domain or from World.Stop, ends the run at the end of
//     the window: every domain finishes it (a world of one domain stops
//     after the time step, as an Engine always has).
//
// World.Now is the latest time step run by any domain, and Run returns it.
//
// # What a block may share across domains
//
// A block touches only its own domain's state while it runs: its units,
// registers, channels, timers, and the producer's side or the consumer's
// side of a link (Ready and Send for the producer; Valid, Peek, Recv and
// Len for the consumer). It must not read or write registers, channels,
// queues or plain Go state of a block in another domain, nor wake another
// domain's unit: domains run at once on different goroutines, and at
// different simulated times. Each statistic (Counter, Histogram) is updated
// by one domain only; declaring statistics, names and signals is safe from
// any domain. OnRecv is refused on a link between two domains, since it
// would run in the consumer's domain. Read-only data built before the run
// (configuration, tables) may be shared freely.
package sim
