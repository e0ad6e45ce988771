package bglpaper

import (
	"testing"

	"github.com/aaemu/aaemu/bgl"
)

// TestStandInModes runs the stand-in's BT-like and MG-like kernels on 8
// nodes in both modes: virtual node mode has twice the tasks, its halos
// between a node's two tasks go by L144's copy and its small packets
// through the virtual FIFOs; the MG-like kernel's two arrays overflow the
// shared L3 only in virtual node mode (misses every step), the BT-like's
// do not; and each task is slower in virtual node mode, but by less than
// half.
func TestStandInModes(t *testing.T) {
	for _, k := range []Kernel{kernels[1], kernels[3]} {
		co, err := StandIn([3]int{2, 2, 2}, bgl.CoprocessorMode, k, 2)
		if err != nil {
			t.Fatal(err)
		}
		vn, err := StandIn([3]int{2, 2, 2}, bgl.VirtualNodeMode, k, 2)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: coprocessor %v a step (%d tasks, %+v); virtual node %v (%d tasks, %+v, %d copies, %d virtual packets)",
			k.Name, co.Step, co.Tasks, co.Memory, vn.Step, vn.Tasks, vn.Memory, vn.Copied, vn.Virtual)
		if co.Tasks != 8 || vn.Tasks != 16 {
			t.Fatalf("%d and %d tasks", co.Tasks, vn.Tasks)
		}
		if co.Copied != 0 || vn.Copied == 0 || vn.Virtual == 0 {
			t.Fatalf("copies %d and %d, %d virtual packets", co.Copied, vn.Copied, vn.Virtual)
		}
		lines := uint64(k.N * k.N * k.N * k.BytesPerPoint / 128)
		if co.Memory.Misses != 8*lines {
			t.Errorf("%s, coprocessor mode: %d L3 misses, want the first step's %d", k.Name, co.Memory.Misses, 8*lines)
		}
		overflow := 2*k.N*k.N*k.N*k.BytesPerPoint > 4<<20
		if thrash := vn.Memory.Misses > 16*lines; thrash != overflow {
			t.Errorf("%s, virtual node mode: %d L3 misses (first step %d), two tasks' arrays overflow the L3: %v", k.Name, vn.Memory.Misses, 16*lines, overflow)
		}
		if vn.Step <= co.Step || vn.Step > co.Step*3/2 {
			t.Errorf("%s: %v a step in virtual node mode against %v", k.Name, vn.Step, co.Step)
		}
	}
	if _, err := StandIn([3]int{2, 2, 2}, bgl.HeaterMode, kernels[0], 1); err == nil {
		t.Error("heater mode accepted")
	}
}

// TestFig5a runs Figure 5a's stand-in reduced: every kernel's task is
// slower in virtual node mode, and both of B15's claims hold (a slowdown
// within 0–25 %, more than 1.6× the total throughput).
func TestFig5a(t *testing.T) {
	fig := Fig5a(ReducedVirtualNode())
	pts, err := fig.Custom.Run(2, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pts) != 3*len(ReducedVirtualNode().Kernels) {
		t.Fatalf("%d points", len(pts))
	}
	co, vn := series(pts, coMode), series(pts, vnMode)
	for i := range co {
		if vn[i].Y <= co[i].Y {
			t.Errorf("%s: %.3f ms a step in virtual node mode, %.3f in coprocessor mode", co[i].Category, vn[i].Y, co[i].Y)
		}
	}
	for _, r := range fig.CheckPoints(pts) {
		if !r.Holds {
			t.Errorf("%s: %s", r.Claim.Text, r.Measured)
		}
		t.Logf("%s: %s", r.Claim.Text, r.Measured)
	}
}

// TestStandInInterrupts runs the stand-in's BT-like kernel on 8 nodes,
// a task a node, interrupt-driven: the halos arrive (the stand-in checks
// every one), the layers take interrupts, the sweep is no shorter than
// in coprocessor mode (the same work, the same memory system) and the
// step is longer (the main core's handlers read the halos the
// coprocessor's helper reads in coprocessor mode).
func TestStandInInterrupts(t *testing.T) {
	k := kernels[1]
	co, err := StandIn([3]int{2, 2, 2}, bgl.CoprocessorMode, k, 1)
	if err != nil {
		t.Fatal(err)
	}
	irq, err := StandInInterrupts([3]int{2, 2, 2}, k, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("step %v (sweep %v) with interrupts (%d taken), %v (%v) in coprocessor mode", irq.Step, irq.Sweep, irq.Interrupts, co.Step, co.Sweep)
	if irq.Interrupts == 0 || irq.Sweep < co.Sweep || irq.Step <= co.Step {
		t.Errorf("interrupts: %d taken, step %v, sweep %v; coprocessor mode: step %v, sweep %v", irq.Interrupts, irq.Step, irq.Sweep, co.Step, co.Sweep)
	}
}
