//go:build !linux

package memory

func flatBytes(n uint64) []byte { return make([]byte, n) }
