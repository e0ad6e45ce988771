package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The MPI path: aaemu built with the mpi tag (cgo against Open MPI),
// started by mpirun on this machine's loopback interface.

var builtMPI struct {
	once sync.Once
	path string
	err  error
}

// aaemuMPIBinary builds aaemu with MPI once for the package's tests.
func aaemuMPIBinary(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"mpirun", "pkg-config"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s not found: install Debian's openmpi-bin, libopenmpi-dev and pkg-config (make deps does)", tool)
		}
	}
	builtMPI.once.Do(func() {
		dir := filepath.Dir(aaemuBinary(t))
		builtMPI.path = filepath.Join(dir, "aaemu-mpi")
		out, err := exec.Command("go", "build", "-tags", "mpi", "-o", builtMPI.path, ".").CombinedOutput()
		if err != nil {
			builtMPI.err = &buildError{err, string(out)}
		}
	})
	if builtMPI.err != nil {
		t.Fatal(builtMPI.err)
	}
	return builtMPI.path
}

// mpiArgs start n ranks on this machine only, more ranks than cores
// allowed, as root too (CI's containers). The ranks talk through shared
// memory (vader), which opens no socket; the TCP byte transfer layer would
// listen on every interface even when told to use lo. mpirun's own
// runtime (ORTE's out-of-band channel) is told to use lo: it advertises
// and uses 127.0.0.1 only.
func mpiArgs(n int) []string {
	return []string{"--allow-run-as-root", "--oversubscribe", "--mca", "btl", "self,vader",
		"--mca", "oob_tcp_if_include", "lo", "-np", fmt.Sprint(n)}
}

// mpirun runs mpirun with args and returns its output and error, killing
// the job (its process group) if it outlives timeout: a hang fails.
func mpirun(t *testing.T, timeout time.Duration, env []string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "mpirun", args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("mpirun %s did not end within %v (a rank hangs):\n%s", strings.Join(args, " "), timeout, out.String())
	}
	return out.String(), err
}

// starScenario is 16 nodes behind a switch with every output: what
// crosses ranks in it is frames, credits, traced values and capture records.
const starScenario = `seed: 3
machine:
  nodes: 16
  cores: 4
  transport: srd
  wire: {rate_mbps: 10000, latency_ns: 300}
workload:
  dht:
    inserts: 40
    cells: 1024
    collisions: [0.25]
    schemes: [AA-SP, RMA]
    procs_per_node: 4
outputs:
  vcd: true
  pcap: true
  trace: "node3.nic0,node12.nic0,net.switch,net.up3"
`

// One run over 2 and 4 MPI ranks writes the files of one process to the
// byte (statistics, capture, waveforms, transaction log) and prints its
// table: the default scenario, shortened, and 16 nodes behind a switch with
// every output.
func TestMPIRanksByteIdentical(t *testing.T) {
	bin := aaemuMPIBinary(t)
	dir := t.TempDir()
	short := filepath.Join(dir, "short.yaml")
	if err := os.WriteFile(short, []byte("workload:\n  dht:\n    inserts: 300\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	star := filepath.Join(dir, "star.yaml")
	if err := os.WriteFile(star, []byte(starScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		file  string
		ranks []int
	}{
		{"default", short, []int{2}},
		{"star", star, []int{2, 4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ref := filepath.Join(dir, c.name+"-1")
			refOut, err := aaemu(t, "run", c.file, "--txn-log", "--no-host-stats", "--out", ref)
			if err != nil {
				t.Fatalf("one process: %v\n%s", err, refOut)
			}
			want := readDir(t, ref)
			for _, n := range c.ranks {
				out := filepath.Join(dir, fmt.Sprintf("%s-%d", c.name, n))
				text, err := mpirun(t, 90*time.Second, nil, append(mpiArgs(n), bin, "run", c.file, "--txn-log", "--no-host-stats", "--out", out)...)
				if err != nil {
					t.Fatalf("%d ranks: %v\n%s", n, err, text)
				}
				if tableOf(text) != tableOf(refOut) {
					t.Errorf("%d ranks: the table differs from one process's:\n%s\nwant\n%s", n, text, refOut)
				}
				got := readDir(t, out)
				for name, w := range want {
					if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
						t.Errorf("%d ranks: %s differs from one process's (%d bytes, want %d)", n, name, len(g), len(w))
					}
				}
				if len(got) != len(want) {
					t.Errorf("%d ranks: %d files, one process wrote %d", n, len(got), len(want))
				}
			}
		})
	}
}

// What cannot run over ranks stops every rank with a clear error, and
// none hangs: more ranks than the cluster has domains, ranks started on
// different scenarios, an error only one rank meets, a workload whose
// results are not carried between ranks, another command than run, an
// aaemu built without MPI, and a rank that dies.
func TestMPIRanksRefuse(t *testing.T) {
	bin := aaemuMPIBinary(t)
	plain := aaemuBinary(t)
	dir := t.TempDir()
	other := filepath.Join(dir, "other.yaml")
	if err := os.WriteFile(other, []byte("workload:\n  dht:\n    inserts: 301\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	for _, c := range []struct {
		name  string
		env   []string
		args  []string
		want  string
		every int // ranks that must each say it
	}{
		{"too-many-ranks", nil, append(mpiArgs(4), bin, "run", "--out", out),
			"4 ranks for a cluster of 2 nodes and its network (3 domains): run at most 3 ranks", 4},
		{"scenarios-differ", nil, append(append(mpiArgs(1), bin, "run", other, "--out", out, ":"), append(mpiArgs(1)[len(mpiArgs(1))-2:], bin, "run", "--out", out)...),
			"rank 1 was started with another scenario or other flags than rank 0", 2},
		{"file-on-one-rank", nil, append(append(mpiArgs(1), bin, "run", filepath.Join(dir, "absent.yaml"), "--out", out, ":"), append(mpiArgs(1)[len(mpiArgs(1))-2:], bin, "run", other, "--out", out)...),
			"rank 0 of 2: open " + filepath.Join(dir, "absent.yaml") + ": no such file or directory", 2},
		{"workload", nil, append(mpiArgs(2), bin, "run", "../../examples/counter.yaml", "--out", out),
			"workload.kind counter cannot run over MPI ranks", 2},
		{"command", nil, append(mpiArgs(2), bin, "workload", "counter"),
			"only `aaemu run` runs over MPI ranks, not `aaemu workload`", 2},
		{"no-mpi-built", nil, append(mpiArgs(2), plain, "run", "--out", out),
			"this aaemu was built without MPI", 2},
		{"rank-dies", nil, append(mpiArgs(2), "-x", "AAEMU_TEST_RANK_EXIT=1", bin, "run", "--out", out),
			"rank 1 exits (test hook)", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			text, err := mpirun(t, 60*time.Second, c.env, c.args...)
			if err == nil {
				t.Fatalf("mpirun succeeded:\n%s", text)
			}
			if n := strings.Count(text, c.want); n < c.every {
				t.Fatalf("%d ranks said %q, want %d:\n%s", n, c.want, c.every, text)
			}
		})
	}
}

// On a Slurm cluster, as users launch a run there: `srun --mpi=pmix -n 2
// aaemu-mpi run …` on the test's one-node Slurm (the ranks find each other
// through the step's PMIx server), and `sbatch -n 2` of a script that runs
// mpirun inside the allocation. Each writes one process's files to the
// byte, and host.json says two ranks shared the run (two independent
// one-process runs would write the same files). The batch script also runs
// the default build as one process: in an allocation of 2 tasks it is not
// a rank. A rank that dies under srun ends the step: no rank hangs.
func TestMPIRanksOnSlurm(t *testing.T) {
	c := sharedSlurm(t)
	bin := aaemuMPIBinary(t)
	plain := aaemuBinary(t)
	dir := t.TempDir()
	star := filepath.Join(dir, "star.yaml")
	if err := os.WriteFile(star, []byte(starScenario), 0o644); err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, "one")
	refOut, err := aaemu(t, "run", star, "--txn-log", "--out", ref)
	if err != nil {
		t.Fatalf("one process: %v\n%s", err, refOut)
	}
	// Ranks on one node talk through shared memory (vader): no socket.
	env := append(c.Env, "OMPI_MCA_pml=ob1", "OMPI_MCA_btl=self,vader", "OMPI_MCA_oob_tcp_if_include=lo")
	// launch runs a Slurm client with a time limit: a hang fails.
	launch := func(t *testing.T, job string, env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, args[0], args[1:]...)
		cmd.Env = env
		cmd.Cancel = func() error {
			scancel := exec.Command("scancel", "--name", job)
			scancel.Env = c.Env
			scancel.Run()
			return cmd.Process.Kill()
		}
		text, err := cmd.CombinedOutput()
		if ctx.Err() != nil {
			t.Fatalf("%s did not end within 120 s (a rank hangs):\n%s", args[0], text)
		}
		return string(text), err
	}
	run := func(t *testing.T, job string, args ...string) string {
		text, err := launch(t, job, env, args...)
		if err != nil {
			t.Fatalf("%s: %v\n%s", args[0], err, text)
		}
		return text
	}
	t.Run("srun", func(t *testing.T) {
		out := filepath.Join(dir, "srun")
		text := run(t, "aaemu-srun", "srun", "--mpi=pmix", "--cpu-bind=cores", "-n", "2", "--job-name", "aaemu-srun",
			bin, "run", star, "--txn-log", "--out", out)
		if tableOf(text) != tableOf(refOut) {
			t.Errorf("the table differs from one process's:\n%s\nwant\n%s", text, refOut)
		}
		sameRun(t, ref, out, 2)
	})
	// A rank that exits without MPI_Finalize: Slurm's PMIx plugin cancels
	// the step, so the other rank is killed rather than left waiting at
	// the barrier (no --kill-on-bad-exit needed).
	t.Run("rank-dies", func(t *testing.T) {
		text, err := launch(t, "aaemu-die", append(env, "AAEMU_TEST_RANK_EXIT=1"), "srun", "--mpi=pmix", "--cpu-bind=cores",
			"-n", "2", "--job-name", "aaemu-die", bin, "run", star, "--out", filepath.Join(dir, "die"))
		if err == nil {
			t.Fatalf("srun succeeded:\n%s", text)
		}
		for _, w := range []string{"aaemu: rank 1 exits (test hook)", "task 1: Exited with exit code 3"} {
			if !strings.Contains(text, w) {
				t.Errorf("srun's output does not say %q:\n%s", w, text)
			}
		}
		// The other rank was killed with the step: srun reports it as the
		// step's cancellation or as task 0 killed, whichever message
		// reaches it first (both seen on the same Slurm).
		if !strings.Contains(text, "CANCELLED") && !strings.Contains(text, "task 0: Killed") {
			t.Errorf("srun's output says neither that the step was cancelled nor that task 0 was killed:\n%s", text)
		}
	})
	t.Run("sbatch-mpirun", func(t *testing.T) {
		out, single := filepath.Join(dir, "sbatch"), filepath.Join(dir, "single")
		script := filepath.Join(dir, "job.sh")
		if err := os.WriteFile(script, []byte(fmt.Sprintf(`#!/bin/sh
set -e
mpirun --allow-run-as-root %s run %s --txn-log --out %s
%s run --no-host-stats --out %s
`, bin, star, out, plain, single)), 0o755); err != nil {
			t.Fatal(err)
		}
		log := filepath.Join(dir, "job.log")
		run(t, "aaemu-sbatch", "sbatch", "--wait", "-n", "2", "--job-name", "aaemu-sbatch", "-o", log, script)
		if text, err := os.ReadFile(log); err != nil || !strings.Contains(tableOf(string(text)), strings.TrimSpace(tableOf(refOut))) {
			t.Errorf("the job's log does not hold one process's table: %v\n%s\nwant\n%s", err, text, refOut)
		}
		sameRun(t, ref, out, 2)
		if _, err := os.Stat(filepath.Join(single, "stats.json")); err != nil {
			t.Errorf("the one-process run in the batch script: %v", err)
		}
	})
}

// sameRun requires out to hold ref's files to the byte, but host.json,
// whose experiments must say they ran over ranks exchanging messages.
func sameRun(t *testing.T, ref, out string, ranks int) {
	t.Helper()
	want, got := readDir(t, ref), readDir(t, out)
	var host struct {
		Experiments []struct {
			Ranks *rankHost `json:"ranks"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal(got["host.json"], &host); err != nil || len(host.Experiments) == 0 {
		t.Fatalf("host.json: %v\n%s", err, got["host.json"])
	}
	for i, e := range host.Experiments {
		if e.Ranks == nil || e.Ranks.Ranks != ranks || e.Ranks.Messages == 0 {
			t.Errorf("experiment %d did not run over %d ranks exchanging messages: %+v", i, ranks, e.Ranks)
		}
	}
	delete(want, "host.json")
	delete(got, "host.json")
	for name, w := range want {
		if g, ok := got[name]; !ok || !bytes.Equal(g, w) {
			t.Errorf("%s differs from one process's (%d bytes, want %d)", name, len(g), len(w))
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d files, one process wrote %d", len(got), len(want))
	}
}
