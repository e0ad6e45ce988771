package roce

import "testing"

func TestNodeEndpointAboveByte(t *testing.T) {
	for _, c := range []struct {
		node, nic int
		mac, ip   string
	}{
		{1, 0, "02:00:00:00:01:00", "10.0.1.1"},
		{255, 2, "02:00:00:00:ff:02", "10.0.255.3"},
		{256, 0, "02:00:00:01:00:00", "10.1.0.1"},
		{1023, 3, "02:00:00:03:ff:03", "10.3.255.4"},
	} {
		e := NodeEndpoint(c.node, c.nic)
		if e.MAC.String() != c.mac || e.IP.String() != c.ip {
			t.Errorf("node %d nic %d: %v %v, want %s %s", c.node, c.nic, e.MAC, e.IP, c.mac, c.ip)
		}
	}
}
