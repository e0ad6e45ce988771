package workload

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/aaemu/aaemu/aa"
	"github.com/aaemu/aaemu/iommu"
	"github.com/aaemu/aaemu/iommu/pte"
	"github.com/aaemu/aaemu/nic"
	"github.com/aaemu/aaemu/sim"
	"github.com/aaemu/aaemu/verbs"
)

// The values of machine.iommu.mode, which are also the stream's schemes.
const (
	IOMMUExtended = "e-iommu"  // the extended IOMMU translates, decides and logs every DMA request
	IOMMUNone     = "no-iommu" // no IOMMU: DMA requests reach memory untranslated (iommu.Spec.Bypass)
)

// StreamOp is the verb a stream moves its data with.
type StreamOp string

// The stream's verbs.
const (
	StreamWrite StreamOp = "write" // RDMA WRITEs into the target's buffer
	StreamSend  StreamOp = "send"  // SENDs into receive buffers the target posts
)

// ParseStreamOp reads a stream verb by name.
func ParseStreamOp(s string) (StreamOp, error) {
	switch StreamOp(s) {
	case StreamWrite, StreamSend:
		return StreamOp(s), nil
	}
	return "", fmt.Errorf("stream op %q: want %s or %s", s, StreamWrite, StreamSend)
}

// StreamConfig is the streaming-bandwidth microbenchmark (the paper's §5.1):
// a process on node 0 streams Messages messages of MsgBytes each to node 1,
// keeping up to Outstanding work requests in flight. With 1 it waits for
// each message's completion before the next, like a stream with a one-packet
// window: latency-bound. With many the link is the limit. Every message
// lands in its own part of the target's buffer, so the whole stream can be
// checked at the end.
type StreamConfig struct {
	Op          StreamOp
	MsgBytes    int // payload per message (1 B .. 1 MB)
	Messages    int // at least 2: the rate is measured between the first and the last arrival
	Outstanding int // work requests in flight (1 .. the send-queue size)
	Seed        uint64
}

// StreamResult is what a stream measured and whether its data arrived.
type StreamResult struct {
	Op          StreamOp `json:"op"`
	MsgBytes    int      `json:"msg_bytes"`
	Messages    int      `json:"messages"`
	Outstanding int      `json:"outstanding"`
	// BytesPerSec is the payload delivered per simulated second, seen at
	// the target: the bytes of messages 2..N over the time from the first
	// message's arrival to the last's (a WRITE has arrived when its last
	// byte is in memory; a SEND when its receive completion is).
	BytesPerSec float64 `json:"payload_bytes_per_second"`
	FirstPS     uint64  `json:"first_arrival_ps"`
	LastPS      uint64  `json:"last_arrival_ps"`
	SimTimePS   uint64  `json:"sim_time_ps"`
	WireBytes   uint64  `json:"wire_bytes"`
	Checksum    uint64  `json:"target_fnv1a64"` // of the target's buffer after the run
	Verified    bool    `json:"verified"`
	Problem     string  `json:"problem,omitempty"`
}

type stream struct {
	cfg         StreamConfig
	c           *aa.System
	src, dst    uint64 // the buffers: Messages × MsgBytes each
	flag        uint64 // the source's start flag, written by the target
	size        uint64 // Messages × MsgBytes
	first, last sim.Tick
	arrived     int
	problems    [2]string // the source's (node 0) and the target's (node 1): they may run at once
	opProgress
}

// check bounds the sizes; it names the scenario key (workload.stream.*)
// at fault.
func (cfg StreamConfig) Check(sqSize int) (key string, err error) {
	switch {
	case cfg.MsgBytes < 1 || cfg.MsgBytes > 1<<20:
		return "msg_bytes", fmt.Errorf("stream: message size %d B out of 1 B..1 MB", cfg.MsgBytes)
	case cfg.Messages < 2:
		return "messages", fmt.Errorf("stream: %d messages, want at least 2 (the rate is measured between the first and the last)", cfg.Messages)
	case cfg.Outstanding < 1 || cfg.Outstanding > sqSize:
		return "outstanding", fmt.Errorf("stream: %d outstanding, want 1..%d (the send-queue size)", cfg.Outstanding, sqSize)
	case uint64(cfg.MsgBytes)*uint64(cfg.Messages) > 1<<30:
		return "messages", fmt.Errorf("stream: %d × %d B is more than 1 GB", cfg.Messages, cfg.MsgBytes)
	}
	return "", nil
}

// SetupStream builds the stream between node 0 and node 1.
func SetupStream(c *aa.System, cfg StreamConfig) (*stream, error) {
	if _, err := ParseStreamOp(string(cfg.Op)); err != nil {
		return nil, err
	}
	if _, err := cfg.Check(c.Spec.SQSize); err != nil {
		return nil, err
	}
	size := uint64(cfg.MsgBytes) * uint64(cfg.Messages)
	s := &stream{cfg: cfg, c: c, size: size}
	s.total = cfg.Messages
	src, dst := c.Nodes[0], c.Nodes[1]
	rw := iommu.Perm{Bits: pte.R | pte.W}
	s.src, s.dst = src.Alloc(size), dst.Alloc(size)
	s.chunks(func(off uint64, b []byte) { src.Mem.Write(s.src+off, b) })
	if err := src.Register(s.src, size, rw); err != nil {
		return nil, err
	}
	if err := dst.Register(s.dst, size, rw); err != nil {
		return nil, err
	}
	s.flag = src.Alloc(4096)
	if err := src.Register(s.flag, 4096, rw); err != nil {
		return nil, err
	}
	go1 := dst.Alloc(4096)
	if err := dst.Register(go1, 4096, rw); err != nil {
		return nil, err
	}
	dst.Mem.Store64(go1, 1)
	src.Spawn(0, "stream_tx", s.send)
	dst.Spawn(0, "stream_rx", func(x *aa.Ctx) { s.receive(x, go1) })
	return s, nil
}

// send waits for the target's go, then posts every message, at most
// Outstanding in flight, and waits for the last completions.
func (s *stream) send(x *aa.Ctx) {
	x.P.Poll(func() bool { return x.N.Mem.Load64(s.flag) != 0 })
	m := uint64(s.cfg.MsgBytes)
	var inflight []verbs.WR
	wait := func() {
		if _, err := x.Wait(inflight[0]); err != nil && s.problems[0] == "" {
			s.problems[0] = err.Error()
		}
		inflight = inflight[1:]
	}
	for k := 0; k < s.cfg.Messages; k++ {
		if len(inflight) == s.cfg.Outstanding {
			wait()
		}
		x.P.Op("stream." + string(s.cfg.Op))
		s.start()
		off := uint64(k) * m
		if s.cfg.Op == StreamSend {
			inflight = append(inflight, x.Send(1, s.src+off, s.cfg.MsgBytes))
		} else {
			inflight = append(inflight, x.Put(1, s.src+off, s.dst+off, s.cfg.MsgBytes))
		}
	}
	for len(inflight) > 0 {
		wait()
	}
}

// receive is the target: it posts its receive buffers (SEND), tells the
// source to start with a WRITE to its flag, and times the arrivals.
func (s *stream) receive(x *aa.Ctx, one uint64) {
	m, n := s.cfg.MsgBytes, s.cfg.Messages
	posted := 0
	post := func() {
		x.PostRecv(0, s.dst+uint64(posted*m), m)
		posted++
	}
	if s.cfg.Op == StreamSend {
		for posted < min(n, s.c.Spec.SQSize) {
			post()
		}
	}
	if _, err := x.Wait(x.Put(0, one, s.flag, 8)); err != nil {
		s.problems[1] = "the start flag: " + err.Error()
		return
	}
	for k := 0; k < n; k++ {
		if s.cfg.Op == StreamSend {
			cqe := x.Recv(0)
			if cqe.Status != nic.StatusOK || int(cqe.Length) != m {
				if s.problems[1] == "" {
					s.problems[1] = fmt.Sprintf("receive %d: status %d, %d B, want %d B", k, cqe.Status, cqe.Length, m)
				}
			}
			if posted < n {
				post()
			}
		} else {
			end := s.dst + uint64((k+1)*m) - 1
			x.P.Poll(func() bool { return x.N.Mem.Load64(end&^7)>>(8*(end&7))&0xff != 0 })
		}
		if k == 0 {
			s.first = x.Now()
		}
		s.arrived++
	}
	s.last = x.Now()
}

// chunks makes the data the source streams, in order, a piece at a time
// (the memory holds it; the workload keeps none): seeded words, the last
// byte of every message made non-zero, as the target sees a WRITE arrive
// by its last byte turning non-zero.
func (s *stream) chunks(f func(off uint64, b []byte)) {
	r := sim.NewRand(s.cfg.Seed, "stream")
	mb := uint64(s.cfg.MsgBytes)
	buf := make([]byte, min(s.size, 1<<16)) // a multiple of 8: whole words but the last
	for off := uint64(0); off < s.size; off += uint64(len(buf)) {
		b := buf[:min(uint64(len(buf)), s.size-off)]
		for i := 0; i < len(b); i += 8 {
			var w [8]byte
			binary.LittleEndian.PutUint64(w[:], r.Uint64())
			copy(b[i:], w[:])
		}
		for e := (off/mb+1)*mb - 1; e < off+uint64(len(b)); e += mb {
			b[e-off] |= 1
		}
		f(off, b)
	}
}

// Result checks that the target's buffer holds exactly the streamed data
// (FNV-1a over the buffer against the source's data; the first differing
// byte if not) and gives the delivered bandwidth.
func (s *stream) Result() StreamResult {
	size := s.size
	dst := s.c.Nodes[1].Mem
	res := StreamResult{Op: s.cfg.Op, MsgBytes: s.cfg.MsgBytes, Messages: s.cfg.Messages, Outstanding: s.cfg.Outstanding,
		FirstPS: uint64(s.first), LastPS: uint64(s.last), SimTimePS: uint64(s.c.Now()), WireBytes: s.c.WireBytes(),
		Checksum: dst.FNV1a64(s.dst, size), Problem: cmp.Or(s.problems[0], s.problems[1])}
	h := fnv.New64a()
	s.chunks(func(_ uint64, b []byte) { h.Write(b) })
	switch {
	case res.Problem != "":
	case s.arrived != s.cfg.Messages:
		res.Problem = fmt.Sprintf("%d of %d messages arrived", s.arrived, s.cfg.Messages)
	case res.Checksum != h.Sum64():
		s.chunks(func(off uint64, want []byte) {
			got := make([]byte, len(want))
			dst.Read(s.dst+off, got)
			for i := range got {
				if got[i] != want[i] && res.Problem == "" {
					at := off + uint64(i)
					res.Problem = fmt.Sprintf("target buffer checksum %#x, want %#x: byte %d (message %d) is %#02x, want %#02x",
						res.Checksum, h.Sum64(), at, at/uint64(s.cfg.MsgBytes), got[i], want[i])
				}
			}
		})
	case s.last <= s.first:
		res.Problem = "no time between the first and the last arrival"
	}
	if s.last > s.first {
		res.BytesPerSec = float64(uint64(s.cfg.Messages-1)*uint64(s.cfg.MsgBytes)) / (float64(s.last-s.first) / 1e12)
	}
	res.Verified = res.Problem == ""
	return res
}
