package pcie

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/aaemu/aaemu/pcie/tlp"
)

var dev = tlp.NewID(1, 0, 0)

// Segmentation properties, over lengths 1..31 and a few large ones, at
// offsets on both sides of a 4 KB boundary (as cocotbext-pcie sweeps them).
func TestWriteSegmentationProperties(t *testing.T) {
	lengths := []int{4096, 4095, 1024, 1000, 513, 256, 129}
	for n := 1; n <= 31; n++ {
		lengths = append(lengths, n)
	}
	var offsets []uint64
	for o := uint64(0); o < 8; o++ {
		offsets = append(offsets, 0x10000+o, 0x10ff8+o, 0x1_0000_0ff8+o)
	}
	for _, mps := range []int{128, 256, 512, 4096} {
		s := Sizes{MPS: mps, MRRS: 512, RCB: 64}
		for _, n := range lengths {
			for _, addr := range offsets {
				data := make([]byte, n)
				for i := range data {
					data[i] = byte(i*7 + 1)
				}
				tlps := s.SegmentWrite(dev, addr, data)
				mem := map[uint64]byte{}
				next := addr
				for _, w := range tlps {
					b, err := w.Encode() // checks BEs, 4 KB crossing, 3DW/4DW
					if err != nil {
						t.Fatalf("MPS %d, %d bytes at %#x: %v", mps, n, addr, err)
					}
					if w.PayloadBytes() > mps {
						t.Fatalf("payload %d > MPS %d", w.PayloadBytes(), mps)
					}
					if _, err := tlp.Decode(b); err != nil {
						t.Fatal(err)
					}
					first := w.Addr + uint64(w.FirstByteOffset())
					if first != next {
						t.Fatalf("TLP starts at %#x, expected %#x (writes out of order or overlapping)", first, next)
					}
					for i := 0; i < w.EnabledBytes(); i++ {
						mem[first+uint64(i)] = w.Data[w.FirstByteOffset()+i]
					}
					next = first + uint64(w.EnabledBytes())
				}
				if next != addr+uint64(n) || len(mem) != n {
					t.Fatalf("MPS %d, %d bytes at %#x: wrote %d bytes up to %#x", mps, n, addr, len(mem), next)
				}
				for i := range data {
					if mem[addr+uint64(i)] != data[i] {
						t.Fatalf("byte %d wrong", i)
					}
				}
			}
		}
	}
}

func TestReadChunks(t *testing.T) {
	s := Sizes{MPS: 256, MRRS: 512, RCB: 64}
	got := fmt.Sprint(s.ReadChunks(0x1f00, 1500))
	want := "[{7936 256} {8192 512} {8704 512} {9216 220}]"
	if got != want {
		t.Fatalf("chunks %s, want %s", got, want)
	}
}

// The worked example of the fact sheet: MPS 128, RCB 64, 64 DW at 0x1010.
func TestSplitCompletionsWorkedExample(t *testing.T) {
	s := Sizes{MPS: 128, MRRS: 512, RCB: 64}
	req := tlp.NewMemRead(dev, 3, 0x1010, 256)
	cpls := s.SplitCompletions(&req, tlp.NewID(0, 0, 0), func(addr uint64, n int) []byte { return make([]byte, n) })
	want := []struct {
		la     uint8
		bc     uint16
		length uint16
	}{{0x10, 256, 28}, {0x00, 144, 32}, {0x00, 16, 4}}
	if len(cpls) != len(want) {
		t.Fatalf("%d completions", len(cpls))
	}
	for i, w := range want {
		c := cpls[i]
		if c.LowerAddr != w.la || c.ByteCount != w.bc || c.Length != w.length || c.Tag != 3 {
			t.Errorf("completion %d: LA %#x BC %d len %d, want %#x %d %d", i, c.LowerAddr, c.ByteCount, c.Length, w.la, w.bc, w.length)
		}
	}
}

// Completion splitting and reassembly properties: RCB boundaries, MPS,
// Byte Count, Lower Address, and the data that comes back.
func TestCompletionSplitAndReassembly(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	memory := func(addr uint64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte((addr + uint64(i)) * 31)
		}
		return b
	}
	for i := 0; i < 3000; i++ {
		s := Sizes{MPS: 128 << r.IntN(3), MRRS: 128 << r.IntN(6), RCB: 64 << r.IntN(2)}
		rq, _ := NewRequester(dev, []int{5, 8, 10}[r.IntN(3)])
		addr := uint64(r.IntN(1 << 20))
		n := 1 + r.IntN(s.MRRS)
		for _, c := range s.ReadChunks(addr, n) {
			req, ok := rq.Issue(c.Addr, c.N)
			if !ok {
				t.Fatal("out of tags")
			}
			if _, err := req.Encode(); err != nil {
				t.Fatalf("%d bytes at %#x: MRd: %v", c.N, c.Addr, err)
			}
			cpls := s.SplitCompletions(&req, tlp.NewID(0, 0, 0), memory)
			for j, cp := range cpls {
				if _, err := cp.Encode(); err != nil {
					t.Fatalf("completion %d: %v", j, err)
				}
				if cp.PayloadBytes() > s.MPS {
					t.Fatalf("completion of %d bytes > MPS %d", cp.PayloadBytes(), s.MPS)
				}
				if j < len(cpls)-1 {
					// The payload starts at the DW of the first byte still
					// owed (Byte Count says how many are owed).
					firstByte := c.Addr + uint64(c.N) - uint64(cp.ByteCount)
					dwEnd := firstByte&^3 + uint64(cp.PayloadBytes())
					if dwEnd%uint64(s.RCB) != 0 {
						t.Fatalf("MPS %d RCB %d, %d bytes at %#x: completion %d ends at %#x, not on an RCB boundary", s.MPS, s.RCB, c.N, c.Addr, j, dwEnd)
					}
				}
				done, data, err := rq.Complete(&cp)
				if err != nil {
					t.Fatal(err)
				}
				if done != (j == len(cpls)-1) {
					t.Fatalf("done=%v at completion %d of %d", done, j, len(cpls))
				}
				if done && !bytes.Equal(data, memory(c.Addr, c.N)) {
					t.Fatalf("reassembled data differs for %d bytes at %#x", c.N, c.Addr)
				}
			}
		}
		if rq.Outstanding() != 0 {
			t.Fatal("tags leaked")
		}
	}
}

func TestRequesterTagLimitAndErrors(t *testing.T) {
	rq, _ := NewRequester(dev, 5)
	var reqs []tlp.TLP
	for {
		req, ok := rq.Issue(uint64(len(reqs))*64, 64)
		if !ok {
			break
		}
		reqs = append(reqs, req)
	}
	if len(reqs) != 32 || rq.Outstanding() != 32 {
		t.Fatalf("5-bit tags gave %d reads in flight", len(reqs))
	}
	bad := tlp.NewCompletion(&reqs[0], 0, tlp.SC, 64, 0, make([]byte, 64))
	bad.Tag = 40
	if _, _, err := rq.Complete(&bad); err == nil {
		t.Fatal("completion with a tag that is not outstanding accepted")
	}
	wrongBC := tlp.NewCompletion(&reqs[1], 0, tlp.SC, 60, 64&0x7f, make([]byte, 64))
	if _, _, err := rq.Complete(&wrongBC); err == nil {
		t.Fatal("wrong Byte Count accepted")
	}
	ur := ErrorCompletion(&reqs[2], 0, tlp.UR)
	if done, _, err := rq.Complete(&ur); !done || err == nil {
		t.Fatal("UR completion must end the read with an error")
	}
	if rq.Outstanding() != 31 {
		t.Fatal("the failed read's tag was not freed")
	}
	ten, _ := NewRequester(dev, 10)
	if ten.Tags() != 768 {
		t.Fatalf("10-bit tags: %d", ten.Tags())
	}
	req, _ := ten.Issue(0, 4)
	if req.Tag < 256 {
		t.Fatalf("10-bit tag %d has Tag[9:8] = 00", req.Tag)
	}
}

// AppendSplitCompletions appends after what its slice holds the very
// completions SplitCompletions returns, whatever the slice held before: a
// completer reusing one slice sends what it sent with a new one.
func TestAppendSplitCompletionsMatchesSplit(t *testing.T) {
	s := Sizes{MPS: 128, MRRS: 512, RCB: 64}
	memory := func(addr uint64, n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(addr) + byte(i)
		}
		return b
	}
	var scratch []tlp.TLP
	for _, tc := range []struct {
		name string
		addr uint64
		n    int
	}{
		{"the worked example", 0x1010, 256},
		{"one completion", 0x2000, 64},
		{"zero-length read", 0x3004, 0},
		{"unaligned across RCBs", 0x403d, 300},
		{"one completion again, after more", 0x5000, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := tlp.NewMemRead(dev, 3, tc.addr, tc.n)
			want := s.SplitCompletions(&req, tlp.NewID(0, 0, 0), memory)
			prefix := tlp.NewMemRead(dev, 9, 0x10, 4)
			got := s.AppendSplitCompletions([]tlp.TLP{prefix}, &req, tlp.NewID(0, 0, 0), memory)
			if len(got) != len(want)+1 || !reflect.DeepEqual(got[0], prefix) || !reflect.DeepEqual(got[1:], want) {
				t.Fatalf("appended %+v, want %+v after the prefix", got, want)
			}
			scratch = s.AppendSplitCompletions(scratch[:0], &req, tlp.NewID(0, 0, 0), memory)
			if !reflect.DeepEqual(scratch, want) {
				t.Fatalf("reused slice %+v, want %+v", scratch, want)
			}
		})
	}
}

// AppendSegmentWrite and AppendReadChunks append, after what their slice
// holds, what the pieces of a write or read were before: one MWr per
// WriteChunks piece with its bytes, ReadChunks' pieces; a reused slice
// gives the same.
func TestAppendSegmentsMatchChunks(t *testing.T) {
	s := Sizes{MPS: 128, MRRS: 512, RCB: 64}
	var wscratch []tlp.TLP
	var rscratch []Chunk
	for _, tc := range []struct {
		name string
		addr uint64
		n    int
	}{
		{"aligned, several pieces", 0x1000, 600},
		{"one piece", 0x2008, 8},
		{"empty", 0x3000, 0},
		{"unaligned across a 4 KB boundary", 0x4f3d, 1300},
		{"one piece again, after more", 0x5000, 16},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := make([]byte, tc.n)
			for i := range data {
				data[i] = byte(i*13 + 5)
			}
			var want []tlp.TLP
			off := 0
			for _, c := range s.WriteChunks(tc.addr, tc.n) {
				want = append(want, tlp.NewMemWrite(dev, 0, c.Addr, data[off:off+c.N]))
				off += c.N
			}
			if got := s.SegmentWrite(dev, tc.addr, data); !reflect.DeepEqual(got, want) {
				t.Fatalf("SegmentWrite %+v, want %+v", got, want)
			}
			prefix := tlp.NewMemRead(dev, 9, 0x10, 4)
			got := s.AppendSegmentWrite([]tlp.TLP{prefix}, dev, tc.addr, data)
			if len(got) != len(want)+1 || !reflect.DeepEqual(got[0], prefix) || len(want) > 0 && !reflect.DeepEqual(got[1:], want) {
				t.Fatalf("appended %+v, want %+v after the prefix", got, want)
			}
			wscratch = s.AppendSegmentWrite(wscratch[:0], dev, tc.addr, data)
			if len(wscratch) != len(want) || len(want) > 0 && !reflect.DeepEqual(wscratch, want) {
				t.Fatalf("reused slice %+v, want %+v", wscratch, want)
			}
			wantR := s.ReadChunks(tc.addr, tc.n)
			rscratch = s.AppendReadChunks(rscratch[:0], tc.addr, tc.n)
			if len(rscratch) != len(wantR) || (len(wantR) > 0 && !reflect.DeepEqual(rscratch, wantR)) {
				t.Fatalf("read pieces %+v, want %+v", rscratch, wantR)
			}
		})
	}
}

// A buffer handed back (Recycle) serves a later read that fits it; a read
// it does not fit gets a new one; at most one is kept per tag; a poisoned
// requester overwrites what it is handed; and a read through a reused
// buffer returns its own bytes, whatever the buffer held.
func TestRequesterRecycle(t *testing.T) {
	complete := func(rq *Requester, addr uint64, n int, fill byte) []byte {
		t.Helper()
		req, ok := rq.Issue(addr, n)
		if !ok {
			t.Fatal("no tag")
		}
		data := make([]byte, n)
		for i := range data {
			data[i] = fill + byte(i)
		}
		c := tlp.NewCompletion(&req, 0, tlp.SC, n, uint8(addr&0x7f), data)
		done, got, err := rq.Complete(&c)
		if !done || err != nil || !bytes.Equal(got, data) {
			t.Fatalf("read of %d: done %v err %v data %v", n, done, err, got)
		}
		return got
	}
	for _, tc := range []struct {
		name   string
		first  int // bytes of the read whose buffer is handed back
		next   int // bytes of the next read
		reused bool
	}{
		{"same size", 64, 64, true},
		{"smaller", 64, 8, true},
		{"larger within the rounded capacity", 40, 64, true},
		{"larger than the capacity", 64, 256, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rq, _ := NewRequester(dev, 5)
			a := complete(rq, 0x1000, tc.first, 1)
			rq.Recycle(a)
			b := complete(rq, 0x2000, tc.next, 100)
			if same := &a[:1][0] == &b[:1][0]; same != tc.reused {
				t.Fatalf("buffer reused %v, want %v", same, tc.reused)
			}
		})
	}
	rq, _ := NewRequester(dev, 5)
	rq.SetPoison(true)
	a := complete(rq, 0x1000, 16, 1)
	rq.Recycle(a)
	if a[:cap(a)][0] != 0xa5 || a[:cap(a)][cap(a)-1] != 0xa5 {
		t.Fatalf("a poisoned requester kept %v", a[:cap(a)])
	}
	for range 40 {
		rq.Recycle(make([]byte, 8))
	}
	if len(rq.Spare()) != rq.Tags() {
		t.Fatalf("%d spare buffers kept, want at most one per tag (%d)", len(rq.Spare()), rq.Tags())
	}
}
