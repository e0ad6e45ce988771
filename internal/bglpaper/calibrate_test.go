package bglpaper

import (
	"testing"

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
