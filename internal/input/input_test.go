package input

import (
	"testing"
)

func TestSuggest(t *testing.T) {
	known := []string{"nodes", "cores", "fabric_mhz", "wire", "rate_mbps", "iotlb_ways"}
	for _, c := range []struct{ name, want string }{
		{"node", "nodes"}, {"Nodes", "nodes"}, {"wyre", "wire"}, {"rate_mpbs", "rate_mbps"}, {"ratembps", "rate_mbps"},
		{"iotlb_wayz", "iotlb_ways"}, {"fabric_hz", "fabric_mhz"}, {"gpu", ""}, {"", ""}, {"x", ""},
	} {
		if got := Suggest(c.name, known); got != c.want {
			t.Errorf("Suggest(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

type inner struct {
	N   uint16  `json:"n"`
	F   float64 `json:"f"`
	B   []byte  `json:"b"`
	Tag string
}

type outer struct {
	A    int     `json:"a"`
	List []inner `json:"list"`
}

// A JSON file decodes with the line of every key, and its mistakes are
// placed on their lines.
func TestJSONTree(t *testing.T) {
	data := "{\n \"a\": -3,\n \"list\": [\n  {\"n\": 7, \"f\": 1.5e3, \"b\": \"AQI=\", \"Tag\": \"x\"},\n  {\"n\": 65535}\n ]\n}\n"
	root, err := JSONTree("f.json", []byte(data))
	if err != nil {
		t.Fatal(err)
	}
	var o outer
	d := &Decoder{File: "f.json", Tag: "json"}
	if err := d.Decode(root, "", &o); err != nil {
		t.Fatal(err)
	}
	if o.A != -3 || len(o.List) != 2 || o.List[0].N != 7 || o.List[0].F != 1500 || string(o.List[0].B) != "\x01\x02" || o.List[0].Tag != "x" || o.List[1].N != 65535 {
		t.Fatalf("%+v", o)
	}
	if d.Line("list[1].n") != 5 || d.Line("a") != 2 || d.Line("list[0].absent") != 4 || d.Line("") != 1 {
		t.Fatalf("lines %v", d.Lines)
	}
	for _, c := range []struct{ data, want string }{
		{"{\"a\": 1,\n \"list\": [{\"n\": 65536}]}", "f.json:2: list[0].n: 65536 is too large (a whole number 0..65535)"},
		{"{\"a\": 1,\n \"list\": [{\"tag\": \"x\"}]}", `f.json:2: list[0].tag: unknown key (did you mean "list[0].Tag"?)`},
		{"{\"a\": 1.25}", "f.json:1: a: 1.25 is not a whole number (a whole number)"},
		{"{\"a\": true}", "f.json:1: a: true is not a whole number (a whole number)"},
		{"{\"a\": 1}\n{", "f.json:2: cannot be read as JSON: more after the value"},
		{"{\n\n\"a\" 1}", "f.json:3: cannot be read as JSON: invalid character '1' after object key"},
		{"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[", "f.json:1: cannot be read as JSON: nested more than 64 deep"},
	} {
		root, err := JSONTree("f.json", []byte(c.data))
		if err == nil {
			var o outer
			err = (&Decoder{File: "f.json", Tag: "json"}).Decode(root, "", &o)
		}
		if err == nil || err.Error() != c.want {
			t.Errorf("%q:\n got %v\nwant %s", c.data, err, c.want)
		}
	}
}
