package verify

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aaemu/aaemu/internal/input"
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
			// A driver call stays between the ops it was between.
			for k := range try.Changes {
				a := &try.Changes[k].After
				*a -= min(max(*a-start, 0), end-start)
			}
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
	c.Changes = append([]Change(nil), s.Changes...)
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

// Load reads a replay file (see Parse).
func Load(path string) (*Stimulus, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(path, b)
}

// Parse reads a replay file, the JSON Save writes: every key must be one of
// a stimulus's, every value of its key's type and in its range (Validate);
// each mistake is an error "file:line: key: what is wrong (what is
// allowed)", list elements named key[i] (ops[3].tlp.Addr).
func Parse(name string, data []byte) (*Stimulus, error) {
	return parseReplay[Stimulus](name, data, replayAllowed)
}

// parseReplay decodes a replay file of either level into a T, naming the
// allowed values of a key from allowed, and validates it.
func parseReplay[T any, PT interface {
	*T
	Validate() error
}](name string, data []byte, allowed map[string]string) (*T, error) {
	root, err := input.JSONTree(name, data)
	if err != nil {
		return nil, err
	}
	var s T
	dec := &input.Decoder{File: name, Tag: "json", Allowed: func(key string) string { return allowed[key] }}
	if err := dec.Decode(root, "", &s); err != nil {
		return nil, err
	}
	if err := PT(&s).Validate(); err != nil {
		return nil, input.Place(err, name, "", dec.Line)
	}
	return &s, nil
}

// replayAllowed is what the keys of a replay file with a range take, for
// the errors of values of the wrong type (Validate checks the ranges).
var replayAllowed = map[string]string{
	"pages[].iuid":       "0..1023: 10 bits",
	"logs[].iuid":        "0..1023: 10 bits",
	"pages[].size":       "4096, 2097152 (2 MB) or 1073741824 (1 GB)",
	"logs[].size":        fmt.Sprintf("a multiple of 8 from 64 to %d bytes", MaxLogSize),
	"logs[].mode":        "0: Poll, 1: Int, 2: SP",
	"ops[].dev":          "an index into devices",
	"consumer_period_ns": fmt.Sprintf("1..%d ns", MaxConsumerNS),
	"fault_records":      "1..256",
}
