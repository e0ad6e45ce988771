package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
)

// Every command that writes files prepares its output directory before it
// simulates: it removes what an earlier run of it may have left there (the
// names it writes, and only those), so that no old file stands beside the
// new ones, and creates the files it writes itself, so that an unwritable
// directory fails at once rather than after a long run.

// clearOutputs removes the files names (relative to dir) that exist, and
// then the directories among them that are left empty.
func clearOutputs(dir string, names []string) error {
	var dirs []string
	for _, n := range names {
		p := filepath.Join(dir, n)
		st, err := os.Lstat(p)
		switch {
		case errors.Is(err, os.ErrNotExist):
			continue
		case err != nil:
			return err
		case st.IsDir():
			dirs = append(dirs, p)
			continue
		}
		if err := os.Remove(p); err != nil {
			return fmt.Errorf("removing the earlier run's %s: %w", p, err)
		}
	}
	for _, d := range dirs {
		os.Remove(d) // only if empty: it may hold files of the user's
	}
	return nil
}

// outputs are files created before the simulation and written after it.
type outputs struct {
	dir   string
	files map[string]*os.File
}

// createOutputs makes dir and creates the files names in it (truncated).
func createOutputs(dir string, names ...string) (*outputs, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	o := &outputs{dir: dir, files: map[string]*os.File{}}
	for _, n := range names {
		f, err := os.Create(filepath.Join(dir, n))
		if err != nil {
			o.abandon()
			return nil, err
		}
		o.files[n] = f
	}
	return o, nil
}

// has reports whether name is one of the outputs.
func (o *outputs) has(name string) bool { return o.files[name] != nil }

// write writes the output name with fn and closes it.
func (o *outputs) write(name string, fn func(io.Writer) error) error {
	f := o.files[name]
	if f == nil {
		return fmt.Errorf("%s: not opened", name)
	}
	delete(o.files, name)
	if err := fn(f); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", f.Name(), err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	return nil
}

// take hands the open file name to the caller, who closes it.
func (o *outputs) take(name string) *os.File {
	f := o.files[name]
	delete(o.files, name)
	return f
}

// abandon closes and removes the outputs never written (a run that failed
// before writing them), so no empty file stands in for a result.
func (o *outputs) abandon() {
	for n, f := range o.files {
		f.Close()
		os.Remove(f.Name())
		delete(o.files, n)
	}
}
