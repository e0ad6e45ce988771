package sweep

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aaemu/aaemu/internal/runctl"
	"github.com/aaemu/aaemu/internal/version"
	"github.com/aaemu/aaemu/sim"
)

// A task is what one worker, one array task's share or one rerun deals in:
// one grid point at one seed. Tasks are numbered point by point, the seeds
// of a point in the order the sweep file lists them.
type Task struct {
	Index int    // in the sweep's task order
	Point Point  // the grid point
	Seed  uint64 // the seed (the base scenario's without seeds)
}

// Shard is one share of a sweep's tasks: those whose index is I modulo N.
// The zero Shard is the whole sweep.
type Shard struct{ I, N int }

// ParseShard reads "i/n" (0 ≤ i < n).
func ParseShard(v string) (Shard, error) {
	a, b, ok := strings.Cut(v, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("--shard %q: want i/n, the i-th of n shares (0 ≤ i < n)", v)
	}
	return Shard{I: i, N: n}, nil
}

func (sh Shard) String() string {
	if sh.N == 0 {
		return "all"
	}
	return fmt.Sprintf("%d/%d", sh.I, sh.N)
}

// Tasks lists every task of the sweep in order.
func (s *Spec) Tasks() []Task {
	seeds := s.Seeds
	if len(seeds) == 0 {
		seeds = []uint64{s.base.Seed}
	}
	var ts []Task
	for _, p := range s.Points() {
		for _, seed := range seeds {
			ts = append(ts, Task{Index: len(ts), Point: p, Seed: seed})
		}
	}
	return ts
}

// shardTasks is the tasks of the sweep's shard.
func (s *Spec) shardTasks() []Task {
	ts := s.Tasks()
	if s.Shard.N <= 1 {
		return ts
	}
	var out []Task
	for _, t := range ts {
		if t.Index%s.Shard.N == s.Shard.I {
			out = append(out, t)
		}
	}
	return out
}

func (s *Spec) taskLabel(t Task) string {
	if len(s.Seeds) == 0 {
		return s.label(t.Point)
	}
	return fmt.Sprintf("%s seed=%d", s.label(t.Point), t.Seed)
}

// Inputs is a digest of everything a task's rows depend on: the scenario
// at its point (every key, after the grid's values are set), its seed, the
// time limit and aaemu's version. A part is reused only when it matches.
func (s *Spec) Inputs(t Task) (string, error) {
	sc, err := s.scenarioAt(t.Point)
	if err != nil {
		return "", err
	}
	sc.Seed = t.Seed
	sc.Partitions, sc.CheckEveryPoll = 0, false // run options: they never change a result
	b, err := json.Marshal(struct {
		Scenario any    `json:"scenario"`
		Seed     uint64 `json:"seed"`
		Seeded   bool   `json:"seeded"` // rows carry their seed
		Until    string `json:"until"`
		Version  string `json:"version"`
	}{sc, t.Seed, len(s.Seeds) > 0, s.Until, version.Version})
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:]), nil
}

// Manifest says what a task was and how it went. It is a record of the
// host (its name and wall time vary run to run): the tables never show it.
type Manifest struct {
	Sweep        string  `json:"sweep"`
	Task         int     `json:"task"`
	Point        string  `json:"point"`
	Seed         uint64  `json:"seed"`
	Inputs       string  `json:"inputs"` // Spec.Inputs
	AaemuVersion string  `json:"aaemu_version"`
	Host         string  `json:"host"`
	Shard        string  `json:"shard"`
	WallSeconds  float64 `json:"wall_seconds"`
	Status       string  `json:"status"` // done or failed
	Error        string  `json:"error,omitempty"`
}

// Part is a task's file: its manifest and, when done, its rows.
type Part struct {
	Manifest Manifest `json:"manifest"`
	Rows     []Row    `json:"rows"`
}

// Task statuses.
const (
	StatusDone   = "done"
	StatusFailed = "failed"
)

// PartFile is the file of task i in parts directory dir.
func PartFile(dir string, i int) string {
	return filepath.Join(dir, fmt.Sprintf("task-%06d.json", i))
}

// ReadPart reads task i's part from dir; ok is false when there is none.
func ReadPart(dir string, i int) (Part, bool, error) {
	b, err := os.ReadFile(PartFile(dir, i))
	if errors.Is(err, os.ErrNotExist) {
		return Part{}, false, nil
	}
	if err != nil {
		return Part{}, false, err
	}
	var p Part
	if err := json.Unmarshal(b, &p); err != nil {
		return Part{}, false, fmt.Errorf("%s: %w", PartFile(dir, i), err)
	}
	return p, true, nil
}

// writePart writes a part whole or not at all (a rename), so that a task
// killed while writing leaves no half file behind to be trusted.
func writePart(dir string, p Part) error {
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return err
	}
	f := PartFile(dir, p.Manifest.Task)
	tmp := fmt.Sprintf("%s.%d.tmp", f, os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, f)
}

// runTask runs one task, or takes its rows from its part when Parts holds
// one done with the same inputs; with Parts it records the outcome.
func (s *Spec) runTask(ctx context.Context, t Task, until sim.Tick) ([]Row, error) {
	if s.Parts == "" {
		return s.runPoint(ctx, t, until)
	}
	inputs, err := s.Inputs(t)
	if err != nil {
		return nil, err
	}
	if p, ok, err := ReadPart(s.Parts, t.Index); err == nil && ok && p.Manifest.Status == StatusDone && p.Manifest.Inputs == inputs {
		return p.Rows, nil
	}
	start := time.Now()
	rows, err := s.runPoint(ctx, t, until)
	if errors.Is(err, runctl.ErrInterrupted) {
		return nil, err // not run to its end: neither done nor failed
	}
	host, _ := os.Hostname()
	m := Manifest{Sweep: s.file, Task: t.Index, Point: s.label(t.Point), Seed: t.Seed, Inputs: inputs,
		AaemuVersion: version.Version, Host: host, Shard: s.Shard.String(),
		WallSeconds: time.Since(start).Seconds(), Status: StatusDone}
	if err != nil {
		m.Status, m.Error, rows = StatusFailed, err.Error(), nil
	}
	if werr := writePart(s.Parts, Part{Manifest: m, Rows: rows}); werr != nil {
		return nil, errors.Join(err, werr)
	}
	return rows, err
}

// Collect reads every task's part from dir, in task order: the rows of the
// tasks done with the sweep's inputs, and the tasks that are missing,
// failed or done with other inputs (a changed sweep, scenario or aaemu).
func (s *Spec) Collect(dir string) (rows []Row, missing []string, err error) {
	for _, t := range s.Tasks() {
		inputs, err := s.Inputs(t)
		if err != nil {
			return nil, nil, err
		}
		p, ok, err := ReadPart(dir, t.Index)
		switch {
		case err != nil:
			return nil, nil, err
		case !ok:
			missing = append(missing, fmt.Sprintf("task %d (%s): not run", t.Index, s.taskLabel(t)))
		case p.Manifest.Status != StatusDone:
			missing = append(missing, fmt.Sprintf("task %d (%s): %s: %s", t.Index, s.taskLabel(t), p.Manifest.Status, p.Manifest.Error))
		case p.Manifest.Inputs != inputs:
			missing = append(missing, fmt.Sprintf("task %d (%s): run with other inputs", t.Index, s.taskLabel(t)))
		default:
			rows = append(rows, p.Rows...)
		}
	}
	return rows, missing, nil
}

// Input is what a parts directory keeps of the sweep, so that a merge needs
// only the directory: the sweep file and its base scenario, as they were.
type Input struct {
	SweepFile    string `json:"sweep_file"`
	Sweep        string `json:"sweep"`
	ScenarioFile string `json:"scenario_file,omitempty"`
	Scenario     string `json:"scenario,omitempty"`
}

// InputFile is the sweep's input in parts directory dir.
func InputFile(dir string) string { return filepath.Join(dir, "sweep-input.json") }

// SaveInput writes the sweep's input into dir (made if need be).
func (s *Spec) SaveInput(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(Input{SweepFile: s.file, Sweep: string(s.data), ScenarioFile: s.baseFile, Scenario: string(s.baseData)}, "", "  ")
	if err != nil {
		return err
	}
	// Every share of a sweep writes it: each whole, by a rename.
	tmp := fmt.Sprintf("%s.%d.tmp", InputFile(dir), os.Getpid())
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, InputFile(dir))
}

// LoadInput parses the sweep kept in parts directory dir.
func LoadInput(dir string) (*Spec, error) {
	b, err := os.ReadFile(InputFile(dir))
	if err != nil {
		return nil, fmt.Errorf("%s: not a sweep's parts directory: %w", dir, err)
	}
	var in Input
	if err := json.Unmarshal(b, &in); err != nil {
		return nil, fmt.Errorf("%s: %w", InputFile(dir), err)
	}
	return ParseWith(in.SweepFile, []byte(in.Sweep), func(string) (string, []byte, error) {
		return in.ScenarioFile, []byte(in.Scenario), nil
	})
}
