package sim

import (
	"hash/fnv"
	"math/rand/v2"
)

// Rand is a seeded pseudo-random generator owned by one component.
type Rand = rand.Rand

// NewRand returns the generator of the component called name in a run with
// root seed seed. Each component has its own stream, so adding or removing one
// component never shifts another's random choices.
func NewRand(seed uint64, name string) *Rand {
	h := fnv.New64a()
	h.Write([]byte(name))
	return rand.New(rand.NewPCG(seed, h.Sum64()))
}
