//go:build linux

package memory

import (
	"runtime"
	"syscall"
	"unsafe"
)

// hugePage is the x86-64 and arm64 transparent huge page size.
const hugePage = 2 << 20

// flatBytes returns n zeroed bytes for a flat store. Large stores are
// mapped outside the Go heap, aligned to 2 MiB and advised to use
// transparent huge pages, as emulators back guest RAM: a DMA stream that
// scatters over thousands of 4 KiB pages otherwise spends its time in host
// TLB misses. The mapping is released when the store is collected. Anything
// that fails falls back to the Go heap.
func flatBytes(s *Store, n uint64) []byte {
	if n < hugePage {
		return make([]byte, n)
	}
	m, err := syscall.Mmap(-1, 0, int(n+hugePage), syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		return make([]byte, n)
	}
	off := (hugePage - uintptr(unsafe.Pointer(&m[0]))%hugePage) % hugePage
	b := m[off : off+uintptr(n) : off+uintptr(n)]
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE; advice only, so an error changes nothing
	runtime.AddCleanup(s, func(m []byte) { _ = syscall.Munmap(m) }, m)
	return b
}
