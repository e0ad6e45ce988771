package verify

import (
	"encoding/json"
	"fmt"
	"os"
)

// Shrink reduces a failing stimulus to a small one that still fails
// (delta debugging over its operations): it removes chunks of operations,
// halving the chunk size whenever no chunk can go, until single operations
// cannot be removed either.
func Shrink(s *Stimulus, fails func(*Stimulus) bool) *Stimulus {
	cur := s.clone()
	chunk := len(cur.Ops) / 2
	for chunk >= 1 {
		removed := false
		for start := 0; start < len(cur.Ops); {
			end := min(start+chunk, len(cur.Ops))
			try := cur.clone()
			try.Ops = append(append([]Op(nil), cur.Ops[:start]...), cur.Ops[end:]...)
			if len(try.Ops) > 0 && fails(try) {
				cur = try
				removed = true
				continue // the same start now holds the next chunk
			}
			start = end
		}
		if !removed {
			chunk /= 2
		}
	}
	return cur
}

func (s *Stimulus) clone() *Stimulus {
	c := *s
	c.Ops = append([]Op(nil), s.Ops...)
	return &c
}

// Save writes the stimulus as a replay file (JSON).
func (s *Stimulus) Save(path string) error {
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Load reads a replay file.
func Load(path string) (*Stimulus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var s Stimulus
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &s, nil
}
