//go:build linux

package memory

import (
	"syscall"
	"unsafe"
)

// hugePage is the x86-64 and arm64 transparent huge page size.
const hugePage = 2 << 20

// flatBytes returns n zeroed bytes for a flat store. Large stores are
// aligned to 2 MiB inside a larger allocation and advised to use
// transparent huge pages, as emulators back guest RAM: a DMA stream that
// scatters over thousands of 4 KiB pages otherwise spends its time in host
// TLB misses. The memory stays the Go heap's, so the collector frees it
// with the store; the advice is only advice, and failing it changes
// nothing.
func flatBytes(n uint64) []byte {
	if n < hugePage {
		return make([]byte, n)
	}
	buf := make([]byte, n+hugePage)
	off := (hugePage - uintptr(unsafe.Pointer(&buf[0]))%hugePage) % hugePage
	b := buf[off : off+uintptr(n) : off+uintptr(n)]
	_ = syscall.Madvise(b, 14) // MADV_HUGEPAGE
	return b
}
