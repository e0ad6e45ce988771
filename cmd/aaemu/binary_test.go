package main

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Tests that need the real process (signals, a terminal) run the built
// binary.

var built struct {
	once sync.Once
	dir  string
	path string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	stopSharedSlurm()
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// aaemuBinary builds aaemu once for the package's tests.
func aaemuBinary(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		if built.dir, built.err = os.MkdirTemp("", "aaemu-bin"); built.err != nil {
			return
		}
		built.path = filepath.Join(built.dir, "aaemu")
		out, err := exec.Command("go", "build", "-o", built.path, ".").CombinedOutput()
		if err != nil {
			built.err = &buildError{err, string(out)}
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.path
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string { return "go build: " + e.err.Error() + "\n" + e.out }

// proc is a running aaemu with its stdout collected and its stderr read
// line by line.
type proc struct {
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	stderr []string
	lines  chan string
	done   chan struct{}
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	p := &proc{cmd: exec.Command(aaemuBinary(t), args...), lines: make(chan string, 1024), done: make(chan struct{})}
	p.cmd.Stdout = &p.stdout
	errPipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(p.done)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			p.mu.Lock()
			p.stderr = append(p.stderr, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		io.Copy(io.Discard, errPipe)
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
			p.cmd.Wait()
		}
	})
	return p
}

// waitLine waits for a line of stderr that contains s.
func (p *proc) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(2 * time.Minute)
	for {
		select {
		case l := <-p.lines:
			if strings.Contains(l, s) {
				return
			}
		case <-p.done:
			t.Fatalf("aaemu ended before printing %q:\n%s", s, p.errText())
		case <-timeout:
			t.Fatalf("no %q on stderr in 2 minutes", s)
		}
	}
}

// waitFor polls cond until it holds (the process still running).
func (p *proc) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for !cond() {
		select {
		case <-p.done:
			t.Fatalf("aaemu ended before %s:\n%s", what, p.errText())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s in 2 minutes", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// interrupt sends SIGINT and waits for the exit status.
func (p *proc) interrupt(t *testing.T) int {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}

func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.stderr, "\n")
}

// fileSize is the size of path, 0 if it does not exist.
func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}
