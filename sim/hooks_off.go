//go:build notrace

package sim

// traceHooks is false in a notrace build: every tracing branch is compiled
// out. Only benchmarks use this build.
const traceHooks = false
