package energy

import "fmt"

// Params are the power figures of the estimate. The paper takes a Realtek
// 8111E-VL-CG NIC's figures from Reviriego et al., "An Initial Evaluation
// of Energy Efficient Ethernet" (IEEE Communications Letters, 2011), for
// the NICs and the routers alike. Those numbers are not reproduced here:
// the defaults are assumptions of the right order for a gigabit Ethernet
// controller, to be replaced with measured ones.
type Params struct {
	NICActiveW float64 // a NIC's power while it sends (assumed 1.0 W)
	NICIdleW   float64 // and while it does not (assumed 0.5 W)
	// RouterJPerByte is the energy a router spends forwarding one byte
	// (assumed, as the paper takes the routers' figures from the same NIC:
	// what the NIC spends above idle per byte at 10 Gb/s, 0.4 nJ).
	RouterJPerByte float64
}

// DefaultParams are the assumed figures above.
func DefaultParams() Params {
	return Params{NICActiveW: 1.0, NICIdleW: 0.5, RouterJPerByte: 0.5 / 1.25e9}
}

// Validate rejects figures that make no sense.
func (p Params) Validate() error {
	switch {
	case p.NICIdleW < 0 || p.NICActiveW < p.NICIdleW:
		return fmt.Errorf("NIC power: active %v W, idle %v W: want 0 ≤ idle ≤ active", p.NICActiveW, p.NICIdleW)
	case p.RouterJPerByte < 0:
		return fmt.Errorf("router energy: %v J per byte is negative", p.RouterJPerByte)
	}
	return nil
}

// NIC is the energy in joules of a NIC that sent bytes at rateMbps during
// seconds: idle power throughout, and the active power's excess while it
// sent (never longer than the interval).
func (p Params) NIC(bytes uint64, rateMbps, seconds float64) float64 {
	busy := min(float64(bytes)*8/(rateMbps*1e6), seconds)
	return p.NICIdleW*seconds + (p.NICActiveW-p.NICIdleW)*busy
}

// Routers is the energy in joules of the routers that forward bytes,
// each byte crossing avgRouters of them.
func (p Params) Routers(bytes uint64, avgRouters float64) float64 {
	return float64(bytes) * avgRouters * p.RouterJPerByte
}
