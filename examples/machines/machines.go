// Package machines holds the machine presets of this directory as bytes,
// for commands that run on them without a file at hand (aaemu paper
// mpi-start runs on the E5000).
package machines

import _ "embed"

// E5000 is e5000.yaml: two or more Sun Enterprise 5000 SMPs.
//
//go:embed e5000.yaml
var E5000 []byte

// U170 is u170.yaml: Sun UltraSPARC 170 workstations, seed 000's NOW.
//
//go:embed u170.yaml
var U170 []byte

// Gemini is gemini.yaml: a Cray XE6-like machine, 32 processes a node on a
// Gemini-class 3D torus (aaemu paper --machine gemini).
//
//go:embed gemini.yaml
var Gemini []byte

// Gem5 is gem5.yaml: the Active Access paper's two-node gem5 set-up of
// Figures 6a–6c (aaemu paper 6a 6b 6c --machine gem5).
//
//go:embed gem5.yaml
var Gem5 []byte

// Gem5E1000 is gem5-e1000.yaml: the gem5 set-up with the e1000's software
// path (machine.nic.offload: none; aaemu paper 6c --machine gem5-e1000).
//
//go:embed gem5-e1000.yaml
var Gem5E1000 []byte
