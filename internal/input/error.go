// Package input reads the files people write or keep for aaemu — scenarios,
// sweeps, verification replay files — and says what is wrong with them in
// one format:
//
//	file:line: dotted.key: what is wrong (what is allowed)
//
// It holds the error type, a decoder from a YAML node tree (JSON files are
// read into the same tree) into Go values that names every key it refuses,
// and the "did you mean" of unknown keys. It knows no model.
package input

import (
	"fmt"
	"strings"
)

// Error is a mistake in an input file. Its message is
// "file:line: key: problem (allowed)", each part left out when empty: a
// check that knows no file (a scenario built in code) gives
// "key: problem (allowed)", or "problem (allowed)" without a key.
type Error struct {
	File    string
	Line    int    // 1-based; 0 when unknown
	Key     string // dotted path, list elements as key[i]
	Problem string // what is wrong, with the value as written
	Allowed string // what is allowed
}

func (e *Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		if e.Line > 0 {
			fmt.Fprintf(&b, ":%d", e.Line)
		}
		b.WriteString(": ")
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Problem)
	if e.Allowed != "" {
		b.WriteString(" (")
		b.WriteString(e.Allowed)
		b.WriteString(")")
	}
	return b.String()
}

// Errorf is an error without a file or a key: a check's finding, which the
// reader of the file places.
func Errorf(allowed, format string, a ...any) *Error {
	return &Error{Problem: fmt.Sprintf(format, a...), Allowed: allowed}
}

// Place fills in the file, line and key of err when it is an *Error that
// lacks them (a copy: err is not changed); any other error becomes the
// problem of one. lines gives the line of a key (nil: no line).
func Place(err error, file, key string, lines func(key string) int) *Error {
	var e Error
	if ie, ok := err.(*Error); ok {
		e = *ie
	} else {
		e = Error{Problem: err.Error()}
	}
	if e.Key == "" {
		e.Key = key
	}
	if e.File == "" {
		e.File = file
	}
	if e.Line == 0 && lines != nil {
		e.Line = lines(e.Key)
	}
	return &e
}
