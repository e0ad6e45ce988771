// Package mpi is an MPI-style point-to-point core over aaemu's machine, for
// the message layers built on it (multi-protocol active messages, MPI over
// a PIO/RDMA NIU, Blue Gene/L's message layer, multirail). Ranks are
// processes on cores (one per core), written as ordinary Go against Comm:
//
//	mpi.Run(cluster, mpi.Config{}, func(c *mpi.Comm) {
//		buf := c.Alloc(8)
//		if c.Rank() == 0 {
//			c.WriteUint64s(buf, []uint64{42})
//			c.Send(buf, 1, 7)
//		} else if c.Rank() == 1 {
//			c.Recv(buf, 0, 7)
//		}
//	})
//
// Buffers live in the ranks' node memory and the data really moves: through
// shared-memory queues (msg/shm) between ranks of a node, through the RDMA
// NICs (verbs SEND/RECV, WRITE, READ) between nodes. Every cost is a costed
// operation of the rank's core or the hardware's own timing.
//
// Matching follows MPI: a message goes to the first posted receive (in
// posting order) whose communicator, source (or AnySource) and tag (or
// AnyTag) match, else waits in the unexpected queue, where a later receive
// finds the first that matches (in arrival order); messages between a pair
// arrive in the order they were sent, so a pair's messages of one
// communicator and tag match in order (non-overtaking). A message of at
// most a transport's eager limit goes in one packet; a larger one by
// rendezvous (RTS, then CTS and DATA, a put and FIN, or a get and FIN),
// moved in chunks. There is no progress thread: a rank makes progress
// only inside its MPI calls (Wait, Test, Send, Recv, collectives).
//
// Run detects a deadlock (every rank left waits in an MPI call, nothing
// is in flight) and reports what each rank waits on.
package mpi
