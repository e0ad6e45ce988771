// Package cpu will hold the CPU cores: workload code as sequential Go calling
// costed operations (memory access, atomics, compute, MMIO, polling) and the
// AA handlers. Nothing is implemented here yet.
package cpu
