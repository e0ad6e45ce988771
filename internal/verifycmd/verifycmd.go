// Package verifycmd is the verify command of aaemu: random stimulus through
// the cycle-level IOMMU and the two-node machine, checked against the golden
// models. It is a package of its own so that the mutation test
// (tools/mutants) links it without the rest of aaemu: a mutant's build then
// compiles only the packages the verifier runs.
package verifycmd

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/aaemu/aaemu/internal/conformance"
	"github.com/aaemu/aaemu/internal/version"
	"github.com/aaemu/aaemu/internal/waveview"
	"github.com/aaemu/aaemu/verify"
	"github.com/aaemu/aaemu/waveforms"
)

type verifyOpts struct {
	seeds    int
	from     uint64
	jobs     int
	coverage bool
	replay   string
	out      string
	apiSeeds int
	shrink   bool
}

// New returns the verify command (subcommands, such as verify mpi, are the
// caller's to add).
func New() *cobra.Command {
	var o verifyOpts
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the cycle-level IOMMU against the golden model on random stimuli",
		Long: `Verify generates seeded, constrained-random stimuli (page set-ups over every
combination of control bits, E and IUIDs from 0 to 1023, 2 MB and 1 GB pages,
a second domain at the same IOVAs, unmapped pages, devices without a context
entry, puts, gets, AtomicOps and flushes of 1 B to 4 KB from several devices,
small logs that overflow, slow and fast consumers, and driver calls during
the run: permissions, mappings, devices and logs changed, fault records
cleared), runs each through
the cycle-level IOMMU and through the golden model of DESIGN.md §2, and
compares every observable effect: memory, each record's header and data and
their order, completion status and data, fault records, and that a flush
completed no earlier than allowed. The API level runs one process's puts,
gets, atomics, sends and active flushes across two nodes (one or two NICs
each, Poll, Int and SP logs, lossy wires, small PCIe credits) and checks
node 1's memory, every record its handlers get, what gets and atomics
return, which receive request each send fills and the log MSIs as the CPU
takes them.

On a mismatch it reports the seed, the simulated time, the block and the
operation where the first divergence shows, shrinks the stimulus to a small
one that still fails, and writes it as a replay file with a VCD and GTKWave
save file of the failing run. The exit status is non-zero.`,
		Example: `  aaemu verify --seeds 1000 --jobs 2
  aaemu verify --seeds 200 --coverage
  aaemu verify --replay out/verify-seed17.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runVerify(cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.seeds, "seeds", 100, "number of seeds to run")
	f.Uint64Var(&o.from, "from", 1, "first seed")
	f.IntVar(&o.jobs, "jobs", 1, "seeds run in parallel (each seed is its own simulation)")
	f.BoolVar(&o.coverage, "coverage", false, "print the coverage table and the bins never hit")
	f.StringVar(&o.replay, "replay", "", "run one stimulus from a replay file")
	f.StringVar(&o.out, "out", "out", "where failing runs are written")
	f.IntVar(&o.apiSeeds, "api-seeds", 20, "API-level seeds (puts, gets, atomics, sends and active flushes of a process across two nodes of one or two NICs)")
	f.BoolVar(&o.shrink, "shrink", true, "shrink a failing stimulus to a small replay (--shrink=false: report the first failure as it is, as the mutation test does)")
	return cmd
}

type seedResult struct {
	seed  uint64
	tlps  int
	mm    *verify.Mismatch
	err   error
	cover *verify.Coverage
}

func runVerify(stdout, stderr io.Writer, o verifyOpts) error {
	if o.replay != "" {
		data, err := os.ReadFile(o.replay)
		if err != nil {
			return err
		}
		if verify.IsAPIReplay(data) {
			return replayAPI(stdout, o, data)
		}
		s, err := verify.Parse(o.replay, data)
		if err != nil {
			return err
		}
		mm, _, err := conformance.Check(s, conformance.Options{})
		if err != nil {
			return err
		}
		if mm == nil {
			fmt.Fprintf(stdout, "%s: %d TLPs agree with the golden model\n", o.replay, len(s.Ops))
			return nil
		}
		return reportMismatch(stdout, s, mm, o, false)
	}
	if o.seeds < 1 || o.jobs < 1 {
		return fmt.Errorf("--seeds and --jobs must be at least 1")
	}
	start := time.Now()
	results := make([]seedResult, o.seeds)
	var p *mpb.Progress
	var bar *mpb.Bar
	if f, ok := stderr.(*os.File); ok && isTerminal(f) {
		p = mpb.New(mpb.WithOutput(stderr), mpb.WithWidth(40))
		bar = p.AddBar(int64(o.seeds), mpb.PrependDecorators(decor.Name("verify "), decor.CountersNoUnit("%d/%d")),
			mpb.AppendDecorators(decor.Percentage()))
	}
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < o.jobs; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				seed := o.from + uint64(i)
				s := verify.Generate(seed)
				mm, obs, err := conformance.Check(s, conformance.Options{})
				r := seedResult{seed: seed, tlps: len(s.Ops), mm: mm, err: err}
				if err == nil && o.coverage {
					r.cover = verify.NewCoverage()
					r.cover.Add(s, obs)
				}
				results[i] = r
				if bar != nil {
					bar.Increment()
				}
			}
		}()
	}
	for i := 0; i < o.seeds; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if p != nil {
		p.Wait()
	}
	wall := time.Since(start)
	tlps, failed := 0, 0
	var first *seedResult
	cover := verify.NewCoverage()
	for i := range results {
		r := &results[i]
		tlps += r.tlps
		if r.err != nil || r.mm != nil {
			failed++
			if first == nil {
				first = r
			}
		}
		if r.cover != nil {
			cover.Merge(r.cover)
		}
	}
	fmt.Fprintf(stdout, "aaemu %s verify: seeds %d..%d, %d TLPs checked in %v (%.0f TLPs/s, %d jobs): %d of %d seeds agree with the golden model\n",
		version.Version, o.from, o.from+uint64(o.seeds)-1, tlps, wall.Round(time.Millisecond), float64(tlps)/wall.Seconds(), o.jobs, o.seeds-failed, o.seeds)
	if first == nil && o.apiSeeds > 0 {
		var c *verify.Coverage
		if o.coverage {
			c = cover
			c.DeclareAPI()
		}
		if err := runAPISeeds(stdout, o, c); err != nil {
			return err
		}
	}
	if o.coverage {
		cover.Print(stdout)
	}
	if first != nil {
		if first.err != nil {
			return fmt.Errorf("seed %d: %w", first.seed, first.err)
		}
		return reportMismatch(stdout, verify.Generate(first.seed), first.mm, o, o.shrink)
	}
	return nil
}

// runAPISeeds checks the API level: one process's puts, gets and active
// flushes across the two-node machine against the API-level golden model.
func runAPISeeds(w io.Writer, o verifyOpts, cover *verify.Coverage) error {
	start := time.Now()
	ops := 0
	for i := 0; i < o.apiSeeds; i++ {
		seed := o.from + uint64(i)
		s := verify.GenerateAPI(seed)
		ops += len(s.Ops)
		mm, obs, err := conformance.CheckAPIWith(s, cover, conformance.Options{})
		if err != nil && obs == nil {
			return fmt.Errorf("API seed %d: %w", seed, err)
		}
		if err != nil || mm != nil {
			return reportAPIMismatch(w, s, mm, err, obs, o, o.shrink)
		}
	}
	fmt.Fprintf(w, "API level: seeds %d..%d, %d operations across two nodes in %v: all agree with the golden model\n",
		o.from, o.from+uint64(o.apiSeeds)-1, ops, time.Since(start).Round(time.Millisecond))
	return nil
}

// reportMismatch explains the first divergence, shrinks the stimulus and
// writes the replay file and the waveforms of the failing run.
func reportMismatch(w io.Writer, s *verify.Stimulus, mm *verify.Mismatch, o verifyOpts, shrink bool) error {
	fmt.Fprintf(w, "MISMATCH seed %d: %v\n", s.Seed, mm)
	if mm.Op >= 0 && mm.Op < len(s.Ops) {
		op := s.Ops[mm.Op]
		fmt.Fprintf(w, "  operation %d: device %d (%v) sends %v\n", mm.Op, op.Dev, s.Devices[op.Dev].ID, &op.TLP)
	}
	if shrink {
		fails := func(c *verify.Stimulus) bool {
			m, _, err := conformance.Check(c, conformance.Options{})
			return err != nil || m != nil
		}
		small := verify.Shrink(s, fails)
		fmt.Fprintf(w, "  shrunk from %d to %d operations\n", len(s.Ops), len(small.Ops))
		s = small
		if m, _, _ := conformance.Check(s, conformance.Options{}); m != nil {
			fmt.Fprintf(w, "  shrunk stimulus: %v\n", m)
		}
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(o.out, fmt.Sprintf("verify-seed%d", s.Seed))
	if err := s.Save(base + ".json"); err != nil {
		return err
	}
	f, err := os.Create(base + ".vcd")
	if err != nil {
		return err
	}
	vw := waveforms.NewWriter(f, waveforms.Options{Version: "aaemu " + version.Version, Comment: fmt.Sprintf("verify seed %d", s.Seed)})
	obs, _ := conformance.Run(s, conformance.Options{Tracer: vw})
	end := uint64(0)
	if obs != nil {
		end = obs.EndPS
	}
	if err := vw.Close(end); err != nil {
		return err
	}
	f.Close()
	if err := writeGTKW(base+".gtkw", filepath.Base(base)+".vcd", vw); err != nil {
		return err
	}
	fmt.Fprintf(w, "  replay: aaemu verify --replay %s.json\n  waveforms: gtkwave %s.vcd %s.gtkw\n", base, base, base)
	return fmt.Errorf("the cycle-level IOMMU disagrees with the golden model (seed %d)", s.Seed)
}

// replayAPI runs an API-level replay file.
func replayAPI(w io.Writer, o verifyOpts, data []byte) error {
	s, err := verify.ParseAPI(o.replay, data)
	if err != nil {
		return err
	}
	mm, obs, err := conformance.CheckAPIWith(s, nil, conformance.Options{})
	if err != nil && obs == nil {
		return err
	}
	if err == nil && mm == nil {
		fmt.Fprintf(w, "%s: %d operations across two nodes agree with the golden model\n", o.replay, len(s.Ops))
		return nil
	}
	return reportAPIMismatch(w, s, mm, err, obs, o, false)
}

// apiFails reports whether an API-level stimulus fails: a mismatch, a
// monitor's report, or a run that does not finish.
func apiFails(s *verify.APIStimulus) bool {
	mm, _, err := conformance.CheckAPIWith(s, nil, conformance.Options{})
	return err != nil || mm != nil
}

// reportAPIMismatch explains an API-level failure (a mismatch, or a run
// that did not finish), with the monitors' messages; shrinks the stimulus
// and writes the replay file and the waveforms of the shrunk run.
func reportAPIMismatch(w io.Writer, s *verify.APIStimulus, mm *verify.Mismatch, runErr error, obs *verify.APIObservation, o verifyOpts, shrink bool) error {
	what := func(mm *verify.Mismatch, err error) string {
		if mm != nil {
			return mm.Error()
		}
		return err.Error()
	}
	fmt.Fprintf(w, "API MISMATCH seed %d: %s\n", s.Seed, what(mm, runErr))
	if mm != nil && mm.Op >= 0 && mm.Op < len(s.Ops) {
		op := s.Ops[mm.Op]
		fmt.Fprintf(w, "  operation %d: %s of %d bytes at %#x\n", mm.Op, op.Kind, op.Len, op.Remote)
	}
	if shrink {
		small := verify.ShrinkAPI(s, apiFails)
		fmt.Fprintf(w, "  shrunk from %d to %d operations\n", len(s.Ops), len(small.Ops))
		if small.Link == nil && s.Link != nil {
			fmt.Fprintf(w, "  the links' and wires' stress not needed\n")
		}
		s = small
	}
	if err := os.MkdirAll(o.out, 0o755); err != nil {
		return err
	}
	base := filepath.Join(o.out, fmt.Sprintf("verify-api-seed%d", s.Seed))
	if err := s.Save(base + ".json"); err != nil {
		return err
	}
	f, err := os.Create(base + ".vcd")
	if err != nil {
		return err
	}
	vw := waveforms.NewWriter(f, waveforms.Options{Version: "aaemu " + version.Version, Comment: fmt.Sprintf("verify API seed %d", s.Seed)})
	m, obs, rerr := conformance.CheckAPIWith(s, nil, conformance.Options{Tracer: vw})
	end := uint64(0)
	if obs != nil {
		end = obs.EndPS
	}
	if err := vw.Close(end); err != nil {
		f.Close()
		return err
	}
	f.Close()
	if err := writeGTKW(base+".gtkw", filepath.Base(base)+".vcd", vw); err != nil {
		return err
	}
	if shrink && (m != nil || rerr != nil) {
		fmt.Fprintf(w, "  shrunk stimulus: %s\n", what(m, rerr))
	}
	if obs != nil && len(obs.Monitor) > 0 {
		fmt.Fprintf(w, "  monitors:\n")
		for _, msg := range obs.Monitor {
			fmt.Fprintf(w, "    %s\n", msg)
		}
	}
	fmt.Fprintf(w, "  replay: aaemu verify --replay %s.json\n  waveforms: gtkwave %s.vcd %s.gtkw\n", base, base, base)
	return fmt.Errorf("the machine disagrees with the API-level golden model (API seed %d)", s.Seed)
}

// writeGTKW writes the save file of a closed VCD at path, which opens it on
// its window, and next to it the translate files of its enumerated signals.
func writeGTKW(path, vcd string, vw *waveforms.Writer) error {
	from, to := vw.Window()
	return waveforms.SaveFile{DumpFile: vcd, Signals: vw.Signals(), From: from, To: to, Enums: waveview.Enums()}.Write(path)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
