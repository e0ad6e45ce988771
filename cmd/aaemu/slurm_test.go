package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// slurmCluster is a one-node Slurm cluster started from Debian's packages
// as an ordinary process tree: munged, slurmctld and slurmd, each in the
// foreground, with a generated slurm.conf under a temporary directory and
// ports on the loopback interface only. Env is what a client (sbatch) needs.
type slurmCluster struct {
	Env   []string
	procs []*exec.Cmd
}

// sbin finds a daemon: on the PATH, or in /usr/sbin (not on a user's PATH).
func sbin(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p
	}
	t.Fatalf("%s not found: install Debian's slurmctld, slurmd, slurm-client and munge (make deps does)", name)
	return ""
}

// freePort is a TCP port on the loopback interface that was free a moment
// ago.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func startSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	munged, ctld, slurmd := sbin(t, "munged"), sbin(t, "slurmctld"), sbin(t, "slurmd")
	sinfo, err := exec.LookPath("sinfo")
	if err != nil {
		t.Fatal("sinfo not found: install Debian's slurm-client (make deps does)")
	}
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	// Unix sockets have short paths: the directory is under the system's
	// temporary directory, not the test's long one.
	d, err := os.MkdirTemp("", "aaemu-slurm")
	if err != nil {
		t.Fatal(err)
	}
	c := &slurmCluster{}
	t.Cleanup(func() {
		c.stop()
		if t.Failed() {
			for _, l := range []string{"slurmctld.log", "slurmd.log", "munged.log"} {
				b, _ := os.ReadFile(filepath.Join(d, "log", l))
				t.Logf("%s:\n%s", l, b)
			}
		}
		os.RemoveAll(d)
	})
	for _, sub := range []string{"munge", "state", "spool", "log", "run"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	key := make([]byte, 1024)
	for i := range key {
		key[i] = byte(i*131 + 7) // a test key; munged only needs one it can read
	}
	if err := os.WriteFile(filepath.Join(d, "munge", "munge.key"), key, 0o400); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(d, "munge", "munge.sock")
	c.start(t, munged, "-F", "--force", "--key-file="+filepath.Join(d, "munge", "munge.key"), "--socket="+sock,
		"--pid-file="+filepath.Join(d, "munge", "munged.pid"), "--log-file="+filepath.Join(d, "log", "munged.log"),
		"--seed-file="+filepath.Join(d, "munge", "seed"))
	waitFor(t, "munged's socket", func() bool { return fileExists(sock) })
	conf := filepath.Join(d, "slurm.conf")
	text := fmt.Sprintf(`ClusterName=aaemutest
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=%d
SlurmdPort=%d
SlurmUser=%s
SlurmdUser=%s
AuthType=auth/munge
AuthInfo=socket=%s
CredType=cred/munge
StateSaveLocation=%s
SlurmdSpoolDir=%s
SlurmctldPidFile=%s
SlurmdPidFile=%s
SlurmctldLogFile=%s
SlurmdLogFile=%s
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, freePort(t), freePort(t), u.Username, u.Username, sock, filepath.Join(d, "state"), filepath.Join(d, "spool"),
		filepath.Join(d, "run", "slurmctld.pid"), filepath.Join(d, "run", "slurmd.pid"),
		filepath.Join(d, "log", "slurmctld.log"), filepath.Join(d, "log", "slurmd.log"))
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	c.Env = append(os.Environ(), "SLURM_CONF="+conf)
	c.start(t, ctld, "-D", "-i", "-f", conf)
	c.start(t, slurmd, "-D", "-f", conf, "-N", "localhost")
	waitFor(t, "the node to be idle in sinfo", func() bool {
		cmd := exec.Command(sinfo, "-h", "-o", "%T")
		cmd.Env = c.Env
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return c
}

func (c *slurmCluster) start(t *testing.T, name string, args ...string) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	c.procs = append(c.procs, cmd)
}

// stop ends the daemons, newest first, and waits for them.
func (c *slurmCluster) stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		p := c.procs[i]
		p.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { p.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			p.Process.Kill()
			<-done
		}
	}
}

func waitFor(t *testing.T, what string, ok func() bool) {
	t.Helper()
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// A sweep of 4 points submitted to a real Slurm cluster as a job array
// (two array tasks, two points each) and merged gives the local executor's
// tables and plots byte for byte; the array tasks' parts carry manifests.
func TestSweepOnSlurm(t *testing.T) {
	c := startSlurm(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "sweep.yaml")
	if err := os.WriteFile(file, []byte("grid:\n  machine.nodes: [2, 3]\n  workload.dht.inserts: [10, 20]\nplot:\n  y: [inserts_per_second]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(dir, "local")
	if out, err := aaemu(t, "sweep", file, "--out", local, "-j", "2"); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	onSlurm := filepath.Join(dir, "slurm")
	cmd := exec.Command(aaemuBinary(t), "sweep", file, "--executor", "slurm", "--slurm-tasks", "2", "--out", onSlurm, "-j", "1")
	cmd.Env = c.Env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), "submitted 4 tasks as Slurm job array") || !strings.Contains(string(out), "(4 of 4 tasks merged)") {
		t.Fatalf("output:\n%s", out)
	}
	for _, f := range []string{"sweep.csv", "sweep.json", "sweep-inserts_per_second.png", "sweep-inserts_per_second.svg"} {
		a, err1 := os.ReadFile(filepath.Join(local, f))
		b, err2 := os.ReadFile(filepath.Join(onSlurm, f))
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the local and the slurm executor (%v, %v)", f, err1, err2)
		}
	}
	// Array task 1 ran tasks 1 and 3.
	b, err := os.ReadFile(filepath.Join(onSlurm, "parts", "task-000003.json"))
	if err != nil || !bytes.Contains(b, []byte(`"shard": "1/2"`)) || !bytes.Contains(b, []byte(`"status": "done"`)) {
		t.Fatalf("task 3's part: %v\n%s", err, b)
	}
}
