// Package workload holds the programs that run on the machine under a
// scheme each: the Active Access paper's DHT (inserts, lookups, deletes
// under AA-Poll/Int/SP, RMA and four kinds of active messages), the access
// counter, the logging of gets, incremental and XOR checkpoints, the
// fault-tolerant parallel sort and the streaming benchmark. Every workload
// checks its own result.
package workload
