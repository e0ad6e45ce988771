package bglpaper

import (
	"strings"
	"testing"

	"github.com/aaemu/aaemu/internal/paper"

	"github.com/aaemu/aaemu/msg/bglml"
	"github.com/aaemu/aaemu/msg/mpi"
)

// TestCalibration derives the table1 profile from the model again and
// requires the stored one (bglml.Table1Message, mpi.Table1MPI) to be what
// it gives, and the model's half round trips with it to be Table 1's
// within a few cycles at both levels.
func TestCalibration(t *testing.T) {
	c, err := Calibrate(CalibrationSetup())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("message layer: %+v; MPI: %+v; rounds %v", c.ML, c.MPI, c.Rounds)
	for level := range 2 {
		for k, p := range bglml.Protocols {
			t.Logf("%d %s: estimated %.1f, start %.1f, calibrated %.1f, paper %.0f", level, p, c.Estimated[level][k], c.Start[level][k], c.Calibrated[level][k], paperTable1[p][level])
		}
	}
	for level := range 2 {
		for k, p := range bglml.Protocols {
			if d := c.Calibrated[level][k] - paperTable1[p][level]; d < -calibrationTolerance || d > calibrationTolerance {
				t.Errorf("level %d %s: calibrated half round trip %.1f cycles, Table 1's %.0f", level, p, c.Calibrated[level][k], paperTable1[p][level])
			}
		}
	}
	if c.ML != bglml.Table1Message {
		t.Errorf("bglml.Table1Message = %+v, the model derives %+v", bglml.Table1Message, c.ML)
	}
	if c.MPI != mpi.Table1MPI {
		t.Errorf("mpi.Table1MPI = %+v, the model derives %+v", mpi.Table1MPI, c.MPI)
	}
}

// TestTable1Profile runs Table 1, 4a and 4b reduced under the table1
// profile: Table 1's claims and 4a's intercept are calibrated inputs the
// model reproduces, 4a's slope stays a check, and 4b's half-bandwidth
// size moves up from the estimated profile's (the remainder is paid per
// message by both cores of the stream).
func TestTable1Profile(t *testing.T) {
	halves := map[bglml.CostProfile]float64{}
	for _, cp := range bglml.CostProfiles {
		Costs = cp
		t.Cleanup(func() { Costs = bglml.Estimated })
		figs := []*paper.Figure{Fig1(ReducedTable1()), Fig4a(ReducedLatency()), Fig4b(ReducedBandwidth())}
		for _, f := range figs {
			pts, err := f.Custom.Run(2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range f.CheckPoints(pts) {
				input := f.Name == "table1" || strings.Contains(r.Claim.Text, "intercept")
				if want := input && cp == bglml.Table1; r.Calibrated != want {
					t.Errorf("%s: %s: calibrated %v, want %v", cp, r.Claim.Text, r.Calibrated, want)
				}
				if r.Calibrated && !r.Holds {
					t.Errorf("%s: %s: the calibration does not reproduce its input: %s", cp, r.Claim.Text, r.Measured)
				}
				if r.Calibrated && r.Verdict() != "calibrated" {
					t.Errorf("%s: %s printed %q", cp, r.Claim.Text, r.Verdict())
				}
			}
			if f.Name == "4b" {
				halves[cp] = halfPoint(series(pts, mpiLevel))
			}
		}
	}
	t.Logf("4b's half-bandwidth size: estimated %.0f B, table1 %.0f B", halves[bglml.Estimated], halves[bglml.Table1])
	if halves[bglml.Table1] < 2*halves[bglml.Estimated] {
		t.Errorf("4b's half-bandwidth size under table1 %.0f B, estimated %.0f B: the remainder does not reach the stream", halves[bglml.Table1], halves[bglml.Estimated])
	}
}

// TestTable1ProfileProgress runs Table 1 and 4a reduced under the table1
// profile with MPI's layer on the communication thread and interrupt
// driven: the calibration measured MPI polling, so MPI's claims (B2, B3,
// 4a's intercept) are predictions there, judged yes or NO, while the
// message layer's own (B1, its pong polls) stay calibrated inputs.
func TestTable1ProfileProgress(t *testing.T) {
	t.Cleanup(func() { Costs, MPIProgress = bglml.Estimated, bglml.Polling })
	for _, how := range []bglml.Progress{bglml.Thread, bglml.Interrupts} {
		Costs, MPIProgress = bglml.Table1, how
		for _, f := range []*paper.Figure{Fig1(ReducedTable1()), Fig4a(ReducedLatency())} {
			pts, err := f.Custom.Run(2, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range f.CheckPoints(pts) {
				want := strings.HasPrefix(r.Claim.Text, "B1 ")
				if r.Calibrated != want {
					t.Errorf("%v: %s: calibrated %v, want %v", how, r.Claim.Text, r.Calibrated, want)
				}
				if r.Calibrated && !r.Holds {
					t.Errorf("%v: %s: the message layer's calibration does not reproduce its input: %s", how, r.Claim.Text, r.Measured)
				}
				if strings.HasPrefix(r.Claim.Text, "B2 ") && strings.Contains(r.Claim.Tolerance, "calibrated") {
					t.Errorf("%v: %s: tolerance %q, want the prediction's", how, r.Claim.Text, r.Claim.Tolerance)
				}
			}
		}
	}
}
