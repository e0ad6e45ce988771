package scenario

import (
	"reflect"
	"testing"
)

// A clone shares no pointer and no list with its original, whatever
// fields the scenario gains: a sweep builds its points concurrently from
// clones of one base.
func TestCloneSharesNothing(t *testing.T) {
	s, err := ParseScenario("s.yaml", []byte("machine:\n  cpu:\n    coherence: {l2_kb: 512, miss_cycles: 50, c2c_cycles: 80, cas_cycles: 15}\nworkload:\n  dht: {schemes: [RMA]}\n  counter: {schemes: [RMA]}\n  getlog: {schemes: [RMA]}\n  xor: {schemes: [RMA]}\n  stream: {schemes: [e-iommu]}\n  sort: {schemes: [RMA]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Clone()
	var walk func(a, b reflect.Value, path string)
	walk = func(a, b reflect.Value, path string) {
		switch a.Kind() {
		case reflect.Pointer:
			if !a.IsNil() {
				if a.Pointer() == b.Pointer() {
					t.Errorf("%s: the clone shares the original's pointer", path)
				}
				walk(a.Elem(), b.Elem(), path)
			}
		case reflect.Slice:
			if a.Len() > 0 && a.Pointer() == b.Pointer() {
				t.Errorf("%s: the clone shares the original's list", path)
			}
		case reflect.Map:
			if !a.IsNil() {
				t.Errorf("%s: a map in a scenario: Clone must copy it", path)
			}
		case reflect.Struct:
			for i := 0; i < a.NumField(); i++ {
				walk(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name)
			}
		}
	}
	walk(reflect.ValueOf(s), reflect.ValueOf(c), "Scenario")
	c.Machine.CPU.Coherence.MissCycles = 4000
	if s.Machine.CPU.Coherence.MissCycles != 50 {
		t.Fatal("setting the clone's key changed the original")
	}
}
