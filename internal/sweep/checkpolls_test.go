package sweep

import "testing"

// CheckEveryPoll reaches every point's scenario (which hands it to the
// cluster, scenario.Scenario.CheckEveryPoll) and, a run option, does not
// change a task's inputs: a part written with it is reused without it.
func TestCheckEveryPollIsARunOption(t *testing.T) {
	s, err := Parse("sweep.yaml", []byte(small), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tasks := s.Tasks()
	if len(tasks) == 0 {
		t.Fatal("no tasks")
	}
	var inputs []string
	for _, check := range []bool{false, true} {
		s.CheckEveryPoll = check
		for _, p := range s.Points() {
			sc, err := s.scenarioAt(p)
			if err != nil {
				t.Fatal(err)
			}
			if sc.CheckEveryPoll != check {
				t.Errorf("check %v: point %v's scenario has CheckEveryPoll %v", check, p, sc.CheckEveryPoll)
			}
		}
		in, err := s.Inputs(tasks[0])
		if err != nil {
			t.Fatal(err)
		}
		inputs = append(inputs, in)
	}
	if inputs[0] != inputs[1] {
		t.Errorf("the inputs differ with CheckEveryPoll: %s and %s", inputs[0], inputs[1])
	}
}
