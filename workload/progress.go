package workload

// opProgress counts a workload's operations as its processes start them,
// for a progress display: it reads nothing the model depends on.
type opProgress struct{ started, total int }

func (p *opProgress) start() { p.started++ }

// Progress is the share of the workload's operations its processes have
// started, 0..1. Call it on the simulation's goroutine (between slices).
func (p *opProgress) Progress() float64 {
	if p.total <= 0 {
		return 0
	}
	return min(1, float64(p.started)/float64(p.total))
}
