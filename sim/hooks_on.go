//go:build !notrace

package sim

// traceHooks compiles the tracing hooks in. Building with -tags notrace
// removes them; the benchmarks compare both builds to measure what the hooks
// cost when no tracer is attached.
const traceHooks = true
