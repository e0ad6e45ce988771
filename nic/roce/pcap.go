package roce

import (
	"io"
	"time"

	"github.com/gopacket/gopacket"
	"github.com/gopacket/gopacket/layers"
	"github.com/gopacket/gopacket/pcapgo"
)

// Capture writes frames to a pcapng file with nanosecond timestamps taken
// from simulated time (picoseconds since the start of the run, counted from
// the Unix epoch) and a per-packet comment that carries the frame's causal
// transaction IDs, so a frame can be followed to the operation that sent it.
type Capture struct {
	w *pcapgo.NgWriter
}

// NewCapture starts a capture; the section header names no host, so the file
// is the same on every machine.
func NewCapture(w io.Writer) (*Capture, error) {
	intf := pcapgo.NgInterface{Name: "aaemu", LinkType: layers.LinkTypeEthernet, TimestampResolution: 9, SnapLength: 0}
	opts := pcapgo.NgWriterOptions{SectionInfo: pcapgo.NgSectionInfo{Hardware: "aaemu", OS: "aaemu", Application: "aaemu"}}
	ng, err := pcapgo.NewNgWriterInterface(w, intf, opts)
	if err != nil {
		return nil, err
	}
	return &Capture{w: ng}, nil
}

// Write records frame at simulated time ps with a comment.
func (c *Capture) Write(ps uint64, frame []byte, comment string) error {
	ci := gopacket.CaptureInfo{Timestamp: time.Unix(0, int64(ps/1000)).UTC(), CaptureLength: len(frame), Length: len(frame)}
	var opts pcapgo.NgPacketOptions
	if comment != "" {
		opts.Comments = []string{comment}
	}
	return c.w.WritePacketWithOptions(ci, frame, opts)
}

// Flush writes buffered frames out.
func (c *Capture) Flush() error { return c.w.Flush() }
