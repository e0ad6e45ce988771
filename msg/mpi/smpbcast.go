package mpi

// SMPAware is MPI-StarT's two-stage broadcast (001:L115) over the
// Algorithms of the rest: the root sends to one rank of every other SMP
// over the network (a binomial tree among those leaders), then each
// leader broadcasts inside its SMP through shared memory (a binomial tree
// among its SMP's ranks). MPICH's broadcast, the flat binomial tree of
// Algorithms.Bcast, assumes every pair of ranks equally far apart and
// crosses the network as often as rank numbers say.
type SMPAware struct{ Algorithms }

// Bcast broadcasts in two stages: between SMPs, then inside each.
func (a SMPAware) Bcast(c *Comm, b Buf, root int) error {
	cc := c.Collective()
	n := c.Size()
	node := func(r int) int { return c.Place(r).Node }
	// The leaders: the root for its SMP, the lowest rank of every other,
	// in order of their first rank.
	leader := map[int]int{node(root): root}
	var leaders []int
	leaders = append(leaders, root)
	for r := 0; r < n; r++ {
		if _, ok := leader[node(r)]; !ok {
			leader[node(r)] = r
			leaders = append(leaders, r)
		}
	}
	me := c.Rank()
	if leader[node(me)] == me {
		if err := binomial(cc, b, leaders, 0, me); err != nil {
			return err
		}
	}
	var local []int
	local = append(local, leader[node(me)])
	for r := 0; r < n; r++ {
		if node(r) == node(me) && r != leader[node(me)] {
			local = append(local, r)
		}
	}
	return binomial(cc, b, local, 0, me)
}

// binomial broadcasts b among the ranks of members from members[root];
// me is the calling rank (one of members).
func binomial(cc *Comm, b Buf, members []int, root, me int) error {
	n := len(members)
	idx := -1
	for i, r := range members {
		if r == me {
			idx = i
		}
	}
	rel := (idx - root + n) % n
	mask := 1
	for mask < n {
		if rel&mask != 0 {
			if _, err := cc.Recv(b, members[(rel-mask+root)%n], tagBcast); err != nil {
				return err
			}
			break
		}
		mask <<= 1
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if rel+mask < n {
			if err := cc.Send(b, members[(rel+mask+root)%n], tagBcast); err != nil {
				return err
			}
		}
	}
	return nil
}

// RoundRobin places ranks over nodes in turn: rank r on node r mod nodes,
// core r / nodes (Config.Place); block placement is the default.
func RoundRobin(nodes int) func(rank int) Place {
	return func(r int) Place { return Place{Node: r % nodes, Core: r / nodes} }
}
