package roce

import (
	"bytes"
	"testing"

	"github.com/gopacket/gopacket/pcapgo"
)

// gopacket's pcapng reader finds an interface per wire, named after it,
// with picosecond resolution, each frame on its wire's interface, and its
// time to the nanosecond (the reader's precision) and comment intact.
func TestCaptureInterfacesReadBack(t *testing.T) {
	var buf bytes.Buffer
	c, err := NewCapture(&buf, []string{"net.up0", "net.down0", "net.up1"})
	if err != nil {
		t.Fatal(err)
	}
	frames := []struct {
		iface int
		ps    uint64
	}{{2, 1}, {0, 999}, {1, 1_000_001}, {0, 1_000_002}, {2, 5<<32 | 123_456_789}}
	for i, f := range frames {
		fr := Frame{Src: NodeEndpoint(0, 0), Dst: NodeEndpoint(1, 0), SrcPort: 0xc011, Packet: samplePackets()[i]}
		b, err := fr.Serialize()
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Write(f.iface, f.ps, b, "txn=1 cause=0"); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Write(3, 0, []byte{0}, ""); err == nil {
		t.Fatal("a frame on an interface the capture lacks was accepted")
	}
	if err := c.Flush(); err != nil {
		t.Fatal(err)
	}
	if _, err := NewCapture(&bytes.Buffer{}, nil); err == nil {
		t.Fatal("a capture without interfaces was accepted")
	}
	r, err := pcapgo.NewNgReader(bytes.NewReader(buf.Bytes()), pcapgo.DefaultNgReaderOptions)
	if err != nil {
		t.Fatal(err)
	}
	for i, f := range frames {
		_, ci, opts, err := r.ReadPacketDataWithOptions()
		if err != nil {
			t.Fatal(err)
		}
		if ci.InterfaceIndex != f.iface || ci.Timestamp.UnixNano() != int64(f.ps/1000) || len(opts.Comments) != 1 || opts.Comments[0] != "txn=1 cause=0" {
			t.Errorf("frame %d: interface %d at %v (%v), want %d at %d ps", i, ci.InterfaceIndex, ci.Timestamp.UnixNano(), opts.Comments, f.iface, f.ps)
		}
	}
	if r.NInterfaces() != 3 {
		t.Fatalf("%d interfaces", r.NInterfaces())
	}
	for i, name := range []string{"net.up0", "net.down0", "net.up1"} {
		intf, _ := r.Interface(i)
		if intf.Name != name || intf.TimestampResolution != 12 || intf.LinkType != 1 {
			t.Errorf("interface %d: %q, resolution %d, link type %d", i, intf.Name, intf.TimestampResolution, intf.LinkType)
		}
	}
}
