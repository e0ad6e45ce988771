package main

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aaemu/aaemu/internal/mpi"
	"github.com/aaemu/aaemu/internal/version"
	"github.com/aaemu/aaemu/scenario"
	"github.com/aaemu/aaemu/sim"
)

// mpiJob is the MPI job this process is a rank of (nil: a plain run, or a
// job of one rank). `aaemu run` then runs one simulation over the ranks:
// each rank builds the machine and runs its share of the nodes (docs/mpi-ranks.md).
var mpiJob *mpi.World

// agreedError is an error every rank of the job returns: the ranks end
// together, without taking each other down.
type agreedError struct{ err error }

func (e agreedError) Error() string { return e.err.Error() }
func (e agreedError) Unwrap() error { return e.err }

// ranked is the MPI side of `aaemu run` over several ranks.
type ranked struct {
	comm sim.Comm
	rank int
	size int
	tmp  string // a rank other than 0 writes its copies of the outputs here
}

func newRanked(c sim.Comm) *ranked {
	if c == nil || c.Size() <= 1 {
		return nil
	}
	return &ranked{comm: c, rank: c.Rank(), size: c.Size()}
}

// agree is a collective check: every rank brings its error (nil for none)
// and gets back the first failing rank's, or nil on every rank.
func (r *ranked) agree(err error) error {
	msg := []byte{}
	if err != nil {
		msg = append([]byte{1}, err.Error()...)
	}
	for i, m := range r.comm.Allgather(msg) {
		if len(m) > 0 {
			if i == r.rank {
				return agreedError{fmt.Errorf("rank %d of %d: %w", i, r.size, err)}
			}
			return agreedError{fmt.Errorf("rank %d of %d: %s", i, r.size, m[1:])}
		}
	}
	return nil
}

// agreeOn checks, collectively, that every rank runs the same resolved
// scenario with the same flags: ranks started with other files or
// arguments would each simulate their share of a different machine.
func (r *ranked) agreeOn(sc scenario.Scenario, o scenarioOpts, until sim.Tick) error {
	h := sha256.New()
	enc := json.NewEncoder(h)
	enc.Encode(sc)
	fmt.Fprintf(h, "%s|%d|%v|%v|%s|%s|%v|%d|%s", version.Version, until, o.noVCD, o.noPcap, o.traceExclude, o.out, o.txnLog, o.partitions, strings.Join(os.Args[1:], " "))
	sum := h.Sum(nil)
	all := r.comm.Allgather(sum)
	var differ []string
	for i, s := range all {
		if string(s) != string(all[0]) {
			differ = append(differ, strconv.Itoa(i))
		}
	}
	if len(differ) > 0 {
		who := "rank " + differ[0] + " was"
		if len(differ) > 1 {
			who = "ranks " + strings.Join(differ, ", ") + " were"
		}
		return agreedError{fmt.Errorf("rank %d of %d: %s started with another scenario or other flags than rank 0 (resolved scenario and flags hash %s… against %s…): every rank must run the same command on the same file",
			r.rank, r.size, who, hex.EncodeToString(sum[:6]), hex.EncodeToString(all[0][:6]))}
	}
	return nil
}

// supports refuses what cannot run over ranks yet, naming why.
func supportsRanks(sc scenario.Scenario) error {
	if sc.Workload.Kind != scenario.KindDHT {
		return fmt.Errorf("workload.kind %s cannot run over MPI ranks: its results are read from Go state of several nodes that is not carried between ranks; over ranks aaemu runs the dht workload (run the others in one process)", sc.Workload.Kind)
	}
	return nil
}

// join makes the experiment's world run over the ranks.
func (r *ranked) join(w *sim.World) error {
	err := w.SetComm(r.comm)
	if errors.Is(err, sim.ErrTooManyRanks) {
		return fmt.Errorf("%d ranks for a cluster of %d nodes and its network (%d domains): run at most %d ranks", r.size, len(w.Domains())-1, len(w.Domains()), len(w.Domains()))
	}
	return err
}

// outDir is where this rank writes: the run's directory on rank 0, a
// temporary one elsewhere (every rank writes the same files, only rank 0's
// are the run's).
func (r *ranked) outDir(dir string) (string, error) {
	if r == nil || r.rank == 0 {
		return dir, nil
	}
	t, err := os.MkdirTemp("", "aaemu-rank"+strconv.Itoa(r.rank)+"-")
	r.tmp = t
	return t, err
}

func (r *ranked) close() {
	if r != nil && r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
}

// stdout is where this rank prints: rank 0 prints the run's table.
func (r *ranked) stdout(w io.Writer) io.Writer {
	if r != nil && r.rank != 0 {
		return io.Discard
	}
	return w
}

// testExit is a test-only hook: AAEMU_TEST_RANK_EXIT=r makes rank r exit
// at the start of the first experiment, as a crashed rank would, for the
// test that the others do not hang.
func (r *ranked) testExit(stderr io.Writer) {
	if v, ok := os.LookupEnv("AAEMU_TEST_RANK_EXIT"); ok && v == strconv.Itoa(r.rank) {
		fmt.Fprintf(stderr, "aaemu: rank %d exits (test hook)\n", r.rank)
		r.close()
		os.Exit(3)
	}
}

// rankHost is what the ranks of a run did, in host.json: the windows, the
// messages and bytes they sent each other at the windows' barriers (summed
// over the ranks), and the slowest rank's build and run wall times.
type rankHost struct {
	Ranks             int     `json:"ranks"`
	Windows           uint64  `json:"windows"`
	Messages          uint64  `json:"messages"`
	Bytes             uint64  `json:"bytes"`
	MessagesPerWindow float64 `json:"messages_per_window"`
	BytesPerWindow    float64 `json:"bytes_per_window"`
	BuildSeconds      float64 `json:"build_seconds"`
	RunSeconds        float64 `json:"run_seconds"`
}

// traffic gathers the ranks' counts (collective).
func (r *ranked) traffic(w *sim.World, build, run time.Duration) *rankHost {
	msgs, bytes := w.RankTraffic()
	b := binary.AppendUvarint(nil, msgs)
	b = binary.AppendUvarint(b, bytes)
	b = binary.AppendUvarint(b, uint64(build))
	b = binary.AppendUvarint(b, uint64(run))
	h := &rankHost{Ranks: r.size, Windows: w.Windows()}
	var bmax, rmax uint64
	for _, m := range r.comm.Allgather(b) {
		var v [4]uint64
		for i := range v {
			x, n := binary.Uvarint(m)
			if n <= 0 {
				break
			}
			v[i], m = x, m[n:]
		}
		h.Messages += v[0]
		h.Bytes += v[1]
		bmax, rmax = max(bmax, v[2]), max(rmax, v[3])
	}
	if h.Windows > 0 {
		h.MessagesPerWindow = float64(h.Messages) / float64(h.Windows)
		h.BytesPerWindow = float64(h.Bytes) / float64(h.Windows)
	}
	h.BuildSeconds, h.RunSeconds = time.Duration(bmax).Seconds(), time.Duration(rmax).Seconds()
	return h
}
