package verify

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// lineOf is the line of the first occurrence of sub in text.
func lineOf(text, sub string) int {
	i := strings.Index(text, sub)
	if i < 0 {
		return 0
	}
	return strings.Count(text[:i], "\n") + 1
}

// Every mistake in a replay file is "file:line: key: what is wrong (what
// is allowed)", exactly: keys that are not the stimulus's, values of the
// wrong type, out of range or naming what the stimulus lacks, and JSON
// that does not parse.
func TestReplayErrors(t *testing.T) {
	s, _ := directed()
	b, err := json.MarshalIndent(s, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	good := string(b)
	if _, err := Parse("s.json", b); err != nil {
		t.Fatalf("the directed stimulus: %v", err)
	}
	// Each case replaces the first occurrence of old in the good file.
	cases := []struct{ name, old, new, want string }{
		{"unknown key", `"fault_records"`, `"fault_record"`, `fault_record: unknown key (did you mean "fault_records"?)`},
		{"unknown key in a list", `"attached"`, `"atached"`, `devices[0].atached: unknown key (did you mean "devices[0].attached"?)`},
		{"string for a number", `"consumer_period_ns": 100`, `"consumer_period_ns": "100"`, `consumer_period_ns: "100" is not a whole number (1..1000000 ns)`},
		{"float for an integer", `"fault_records": 4`, `"fault_records": 4.5`, "fault_records: 4.5 is not a whole number (1..256)"},
		{"negative for unsigned", `"seed": 1`, `"seed": -1`, "seed: -1 is negative (a whole number ≥ 0)"},
		{"beyond the type", `"iuid": 1,`, `"iuid": 70000,`, "logs[0].iuid: 70000 is too large (0..1023: 10 bits)"},
		{"page size", `"mapped": true`, `"mapped": true, "size": 8192`, "pages[0].size: 8192 is no page size (4096, 2097152 (2 MB) or 1073741824 (1 GB))"},
		{"AA bits on a large page", `"bits": 9223372036854777219,`, `"bits": 9223372036854777219, "size": 2097152,`, "pages[0].bits: 0x8000000000000583, IUID 1 (R and W only, IUID 0, on a large page (the AA bits live in 4 KB leaves))"},
		{"list for a value", `"mapped": true`, `"mapped": [true]`, "pages[0].mapped: a list where a single value belongs (true or false)"},
		{"value for a list", `"ops": [`, `"ops": 3, "x": [`, "ops: 3 where a list belongs (a list of sections of keys)"},
		{"not base64", `"Data": "YWJjZGVmZ2g="`, `"Data": "!!"`, `ops[0].tlp.Data: "!!" is not base64 (a base64 string)`},
		{"key twice", `"seed": 1,`, `"seed": 1, "seed": 2,`, "seed: given twice (once; first at line 2)"},
		{"no such device", `"dev": 0`, `"dev": 3`, "ops[0].dev: 3 is no device (0..0: an index into devices)"},
		{"bad TLP", `"Length": 2`, `"Length": 3`, "ops[0].tlp.Length: 3 DW but 8 payload bytes (a TLP that encodes)"},
		{"consumer period 0", `"consumer_period_ns": 100`, `"consumer_period_ns": 0`, "consumer_period_ns: 0 is out of range (1..1000000 ns)"},
		{"consumer period beyond", `"consumer_period_ns": 100`, `"consumer_period_ns": 2305843009213693952`, "consumer_period_ns: 2305843009213693952 is out of range (1..1000000 ns)"},
		{"log size", `"size": 4096`, `"size": 0`, "logs[0].size: 0 is out of range (a multiple of 8 from 64 to 1048576 bytes)"},
		{"log mode", `"mode": 2`, `"mode": 7`, "logs[0].mode: 7 is not a notification mode (0: Poll, 1: Int, 2: SP)"},
		{"flush without a log", `"iuid": 1,
   "iova": 1073745920`, `"iuid": 2,
   "iova": 1073745920`, "flushes[0].iuid: 2 has no log (the IUID of one of logs)"},
		{"page in the tables", `"pa": 1342177280`, `"pa": 16777216`, "pages[0].pa: 0x1000000 is in the IOMMU's tables (outside the IOMMU's tables, 0x1000000..0x2000000)"},
		{"page unaligned", `"iova": 1073741824`, `"iova": 1073741825`, "pages[0].iova: 0x40000001 (a multiple of the page's size below 2^48)"},
		{"bits", `"bits": 1,`, `"bits": 4,`, "pages[1].bits: 0x4 has other bits (R, W, WL, WLD, RL, RLD and E only)"},
		{"syntax", `"seed": 1,`, `"seed": 1,,`, "cannot be read as JSON: invalid character ',' looking for beginning of object key string"},
		{"truncated", `"fault_records": 4`, `"fault_records": `, "cannot be read as JSON: invalid character '}' looking for beginning of value"},
		{"truncated file", "\n}", "", "cannot be read as JSON: it ends before the value does"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(good, c.old) {
				t.Fatalf("%q is not in the file", c.old)
			}
			file := strings.Replace(good, c.old, c.new, 1)
			line := lineOf(good, c.old)
			if c.name == "truncated" {
				line++ // the error is where the value should be: the closing brace
			}
			want := fmt.Sprintf("s.json:%d: %s", line, c.want)
			_, err := Parse("s.json", []byte(file))
			if err == nil || err.Error() != want {
				t.Fatalf("\n got %v\nwant %s", err, want)
			}
		})
	}
	for _, c := range []struct{ file, want string }{
		{"[]", "s.json:1: a list where a section of keys belongs (the keys of the file: seed, devices, pages, logs, flushes, ops, consumer_period_ns, fault_records, changes)"},
		{"{}", "s.json:1: devices: 0 devices (1..64 devices)"},
		{"", "s.json:1: cannot be read as JSON: no value"},
		{`{"seed": 1`, "s.json:1: cannot be read as JSON: it ends before the value does"},
		{"{} {}", "s.json:1: cannot be read as JSON: more after the value"},
	} {
		if _, err := Parse("s.json", []byte(c.file)); err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.file, err, c.want)
		}
	}
}

// Every stimulus the generator makes is a valid replay file, as Save
// writes it.
func TestGeneratedStimuliParse(t *testing.T) {
	for seed := uint64(1); seed <= 500; seed++ {
		b, err := json.MarshalIndent(Generate(seed), "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Parse("s.json", b); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
	}
}
