package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/pflag"

	"github.com/aaemu/aaemu/internal/sweep"
	"github.com/aaemu/aaemu/scenario"
)

// block is a fenced code block of a Markdown file.
type block struct {
	file, lang, text string
	line             int
	output           string // the command whose output it shows (<!-- output of: CMD -->)
}

var outputOf = regexp.MustCompile(`<!-- output of: (.*?) -->`)

func blocks(t *testing.T, file string) []block {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	lines := strings.Split(string(data), "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		b := block{file: file, lang: strings.TrimPrefix(lines[i], "```"), line: i + 1}
		if i > 0 {
			if m := outputOf.FindStringSubmatch(lines[i-1]); m != nil {
				b.output = m[1]
			}
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n")
		out = append(out, b)
	}
	return out
}

// commandArgs turns a documented command line into aaemu's arguments, run
// from this package's directory: paths into the repository made relative
// to it, and outputs into dir.
func commandArgs(line, dir string) ([]string, bool) {
	line = strings.TrimSpace(line)
	if i := strings.Index(line, " #"); i >= 0 {
		line = strings.TrimSpace(line[:i])
	}
	f := strings.Fields(line)
	if len(f) == 0 || (f[0] != "aaemu" && f[0] != "bin/aaemu") {
		return nil, false
	}
	var args []string
	for i := 1; i < len(f); i++ {
		a := strings.Trim(f[i], `'"`)
		if strings.HasPrefix(a, "examples/") {
			a = "../../" + a
		}
		if a == "--out" && i+1 < len(f) {
			args = append(args, a, filepath.Join(dir, f[i+1]))
			i++
			continue
		}
		args = append(args, a)
	}
	return args, true
}

// The README's every command runs, and every output it shows is what the
// command prints; every command the documents in docs/ show is one aaemu
// accepts (its sub-command and flags), every make target exists, and every
// YAML snippet is a valid scenario or sweep.
func TestDocumentedCommands(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	makefile, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range append([]string{"../../README.md"}, docs...) {
		readme := strings.HasSuffix(file, "README.md")
		for _, b := range blocks(t, file) {
			where := filepath.Base(file) + ":" + itoa(b.line)
			switch {
			case b.output != "":
				dir := t.TempDir()
				args, _ := commandArgs(b.output, dir)
				if !hasFlag(args, "--out") && acceptsOut(args) {
					args = append(args, "--out", dir)
				}
				out, err := aaemu(t, args...)
				if err != nil {
					t.Fatalf("%s: %s: %v\n%s", where, b.output, err, out)
				}
				for _, l := range strings.Split(b.text, "\n") {
					if !strings.Contains(out, l) {
						t.Errorf("%s: `%s` no longer prints %q; it prints:\n%s", where, b.output, l, out)
					}
				}
			case b.lang == "sh":
				for _, l := range strings.Split(b.text, "\n") {
					if m := regexp.MustCompile(`^make (\w[\w-]*)`).FindStringSubmatch(strings.TrimSpace(l)); m != nil {
						if !bytes.Contains(makefile, []byte("\n"+m[1]+":")) {
							t.Errorf("%s: make %s: no such target", where, m[1])
						}
						continue
					}
					dir := t.TempDir()
					args, ok := commandArgs(l, dir)
					if !ok {
						continue
					}
					if !readme {
						checkAccepted(t, where, args)
						continue
					}
					if !hasFlag(args, "--out") && acceptsOut(args) {
						args = append(args, "--out", dir)
					}
					if out, err := aaemu(t, args...); err != nil {
						t.Errorf("%s: %s: %v\n%s", where, l, err, out)
					}
				}
			case b.lang == "yaml":
				if strings.Contains(b.text, "\ngrid:") || strings.HasPrefix(b.text, "grid:") {
					if _, err := sweep.Parse(where, []byte(b.text), "../../examples"); err != nil {
						t.Errorf("%s: the sweep snippet does not parse: %v", where, err)
					}
				} else if _, err := scenario.ParseScenario(where, []byte(b.text)); err != nil {
					t.Errorf("%s: the scenario snippet does not parse: %v", where, err)
				}
			}
		}
	}
}

func hasFlag(args []string, f string) bool {
	for _, a := range args {
		if a == f || strings.HasPrefix(a, f+"=") {
			return true
		}
	}
	return false
}

// acceptsOut: the sub-command writes files into --out (default ./out,
// which a test must not write into).
func acceptsOut(args []string) bool {
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	cmd, _, err := root.Find(args)
	return err == nil && cmd.Flags().Lookup("out") != nil
}

// checkAccepted fails unless aaemu has the sub-command and its flags.
func checkAccepted(t *testing.T, where string, args []string) {
	t.Helper()
	root := newRoot(&bytes.Buffer{}, &bytes.Buffer{})
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root && len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		t.Errorf("%s: aaemu %s: no such command (%v)", where, strings.Join(args, " "), err)
		return
	}
	if err := cmd.ParseFlags(rest); err != nil && !errors.Is(err, pflag.ErrHelp) {
		t.Errorf("%s: aaemu %s: %v", where, strings.Join(args, " "), err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
