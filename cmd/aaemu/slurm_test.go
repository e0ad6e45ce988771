package main

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// slurmCluster is a one-node Slurm cluster started from Debian's packages
// as an ordinary process tree: munged, slurmctld and slurmd, each in the
// foreground, with a generated slurm.conf under a temporary directory.
// Every daemon, srun and the steps' PMIx servers bind to 127.0.0.1 (the
// node's and the controller's address; CommunicationParameters keeps them
// off the wildcard address). Env is what a client (sbatch, srun) needs.
type slurmCluster struct {
	Env   []string
	dir   string
	procs []*exec.Cmd
}

// The package's tests share one cluster: it starts on first use and
// stops when the tests end (TestMain).
var slurm struct {
	once sync.Once
	c    *slurmCluster
	err  error
}

// sharedSlurm is the package's one-node Slurm cluster, started once.
func sharedSlurm(t *testing.T) *slurmCluster {
	t.Helper()
	slurm.once.Do(func() { slurm.c, slurm.err = startSlurm() })
	if slurm.err != nil {
		t.Fatal(slurm.err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Log(slurm.c.logs())
		}
	})
	return slurm.c
}

// stopSharedSlurm stops the shared cluster, if a test started it.
func stopSharedSlurm() {
	if slurm.c != nil {
		slurm.c.stop()
	}
}

// sbin finds a daemon: on the PATH, or in /usr/sbin (not on a user's PATH).
func sbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if p := filepath.Join("/usr/sbin", name); fileExists(p) {
		return p, nil
	}
	return "", fmt.Errorf("%s not found: install Debian's slurmctld, slurmd, slurm-client and munge (make deps does)", name)
}

// freePort is a TCP port on the loopback interface that was free a moment
// ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func startSlurm() (c *slurmCluster, err error) {
	var munged, ctld, slurmd string
	for _, s := range []struct {
		p    *string
		name string
	}{{&munged, "munged"}, {&ctld, "slurmctld"}, {&slurmd, "slurmd"}} {
		if *s.p, err = sbin(s.name); err != nil {
			return nil, err
		}
	}
	sinfo, err := exec.LookPath("sinfo")
	if err != nil {
		return nil, errors.New("sinfo not found: install Debian's slurm-client (make deps does)")
	}
	u, err := user.Current()
	if err != nil {
		return nil, err
	}
	// NoInAddrAny and NoCtldInAddrAny bind the daemons, srun and the
	// steps' listeners (the PMIx server among them) to the address the
	// host name resolves to instead of the wildcard address: to 127.0.0.1
	// where the name resolves to a loopback address. Elsewhere they would
	// bind to an address slurmctld does not reach the node on (NodeAddr is
	// 127.0.0.1), so the daemons keep the wildcard address, and every
	// connection is still to this host's own addresses.
	host, err := os.Hostname()
	if err != nil {
		return nil, err
	}
	comm := "CommunicationParameters=NoInAddrAny,NoCtldInAddrAny"
	addrs, err := net.LookupHost(host)
	if err != nil {
		addrs = []string{"nothing"}
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip == nil || !ip.IsLoopback() {
			comm = "# " + comm + " (host name " + host + " resolves to " + a + ")"
			break
		}
	}
	ports := make([]int, 2)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return nil, err
		}
	}
	// Unix sockets have short paths: the directory is under the system's
	// temporary directory, not the test's long one.
	d, err := os.MkdirTemp("", "aaemu-slurm")
	if err != nil {
		return nil, err
	}
	c = &slurmCluster{dir: d}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.logs())
			c.stop()
			c = nil
		}
	}()
	for _, sub := range []string{"munge", "state", "spool", "log", "run"} {
		if err := os.MkdirAll(filepath.Join(d, sub), 0o700); err != nil {
			return c, err
		}
	}
	key := make([]byte, 1024)
	for i := range key {
		key[i] = byte(i*131 + 7) // a test key; munged only needs one it can read
	}
	if err := os.WriteFile(filepath.Join(d, "munge", "munge.key"), key, 0o400); err != nil {
		return c, err
	}
	sock := filepath.Join(d, "munge", "munge.sock")
	if err := c.start(munged, "-F", "--force", "--key-file="+filepath.Join(d, "munge", "munge.key"), "--socket="+sock,
		"--pid-file="+filepath.Join(d, "munge", "munged.pid"), "--log-file="+filepath.Join(d, "log", "munged.log"),
		"--seed-file="+filepath.Join(d, "munge", "seed")); err != nil {
		return c, err
	}
	if err := waitFor("munged's socket", func() bool { return fileExists(sock) }); err != nil {
		return c, err
	}
	conf := filepath.Join(d, "slurm.conf")
	// task/affinity binds a step's tasks to cores (srun --cpu-bind=cores):
	// unbound ranks that poll at the barrier take each other's core.
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
TaskPlugin=task/affinity
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
%s
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
InactiveLimit=0
KillWait=5
Waittime=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP
`, ports[0], ports[1], u.Username, u.Username, sock, filepath.Join(d, "state"), filepath.Join(d, "spool"),
		filepath.Join(d, "run", "slurmctld.pid"), filepath.Join(d, "run", "slurmd.pid"),
		filepath.Join(d, "log", "slurmctld.log"), filepath.Join(d, "log", "slurmd.log"), comm)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return c, err
	}
	c.Env = append(os.Environ(), "SLURM_CONF="+conf)
	if err := c.start(ctld, "-D", "-i", "-f", conf); err != nil {
		return c, err
	}
	if err := c.start(slurmd, "-D", "-f", conf, "-N", "localhost"); err != nil {
		return c, err
	}
	err = waitFor("the node to be idle in sinfo", func() bool {
		cmd := exec.Command(sinfo, "-h", "-o", "%T")
		cmd.Env = c.Env
		out, err := cmd.Output()
		return err == nil && strings.TrimSpace(string(out)) == "idle"
	})
	return c, err
}

func (c *slurmCluster) start(name string, args ...string) error {
	cmd := exec.Command(name, args...)
	cmd.Env = c.Env
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("%s: %v", name, err)
	}
	c.procs = append(c.procs, cmd)
	return nil
}

// logs are the daemons' logs, for a failure's report.
func (c *slurmCluster) logs() string {
	var b strings.Builder
	for _, l := range []string{"slurmctld.log", "slurmd.log", "munged.log"} {
		t, _ := os.ReadFile(filepath.Join(c.dir, "log", l))
		fmt.Fprintf(&b, "%s:\n%s\n", l, t)
	}
	return b.String()
}

// stop cancels what is still queued or running (a step's slurmstepd is
// not a child of slurmd: it would outlive it), then ends the daemons,
// newest first, waits for them and removes the directory.
func (c *slurmCluster) stop() {
	if len(c.procs) == 3 {
		cancel := exec.Command("scancel", "--full", "--user", strconv.Itoa(os.Getuid()))
		cancel.Env = c.Env
		cancel.Run()
		waitFor("the jobs to end", func() bool {
			q := exec.Command("squeue", "-h", "-o", "%i")
			q.Env = c.Env
			out, err := q.Output()
			return err != nil || len(bytes.TrimSpace(out)) == 0
		})
	}
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
	c.procs = nil
	os.RemoveAll(c.dir)
}

func waitFor(what string, ok func() bool) error {
	for end := time.Now().Add(60 * time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if ok() {
			return nil
		}
	}
	return fmt.Errorf("timed out waiting for %s", what)
}

// A sweep of 4 points submitted to a real Slurm cluster as a job array
// (two array tasks, two points each) and merged gives the local executor's
// tables and plots byte for byte; the array tasks' parts carry manifests.
func TestSweepOnSlurm(t *testing.T) {
	c := sharedSlurm(t)
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
