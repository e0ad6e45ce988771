// Package waveforms writes what the models do as waveforms: a VCD file
// (IEEE 1364-2005 clause 18) that GTKWave, Surfer and other viewers open, and a
// GTKWave save file (.gtkw) that opens it on the traced window with the
// signals grouped by block, those that never change set apart, and enumerated
// values shown by name (translate filter files).
// It also holds a strict VCD reader used to check files, since the common
// viewers accept almost anything.
//
// The package imports nothing from the models: Writer implements the kernel's
// Tracer interface, and is attached to an engine from outside.
package waveforms
