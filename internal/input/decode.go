package input

import (
	"encoding/base64"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Decoder fills a Go value from a YAML node tree (a JSON file's too: see
// JSONTree). Every key must be a field of the value, every value of the
// field's type: a float in an integer key, a negative number in an unsigned
// one, a number out of the type's range, a list where a section belongs
// are all errors that name the key. A null value, or a key left out, keeps
// what the value held.
type Decoder struct {
	File string
	// Tag is the struct tag that names the keys, "yaml" or "json"; a field
	// without one is named as the tag's package would (yaml: lower case,
	// json: the Go name), and "-" is no key.
	Tag string
	// Allowed says what a key takes (its range), for errors about the
	// value's type; keys come with list indices as "[]". nil, or "" for a
	// key, falls back on the type's description.
	Allowed func(key string) string
	// Lines holds the line of every key decoded (of the value, for list
	// elements): Line finds a key's.
	Lines map[string]int

	all []string // every dotted key under the value decoded, for suggestions
}

// YAMLTree parses a YAML document into a node tree; a syntax error is an
// *Error with the line.
func YAMLTree(file string, data []byte) (*yaml.Node, error) {
	var root yaml.Node
	if err := yaml.Unmarshal(data, &root); err != nil {
		return nil, syntaxError(file, err)
	}
	return &root, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func syntaxError(file string, err error) *Error {
	msg := err.Error()
	e := &Error{File: file}
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		msg = m[2]
	}
	e.Problem = "cannot be read as YAML: " + strings.TrimPrefix(msg, "yaml: ")
	return e
}

// Decode fills out (a pointer) from n; key is the dotted path of n itself
// ("" for a whole file).
func (d *Decoder) Decode(n *yaml.Node, key string, out any) error {
	if d.Lines == nil {
		d.Lines = map[string]int{}
	}
	v := reflect.ValueOf(out).Elem()
	d.all = d.Keys(v.Type(), key)
	if r := resolve(n); r != nil {
		if _, ok := d.Lines[key]; !ok {
			d.Lines[key] = r.Line
		}
	}
	return d.value(n, key, v, 0)
}

// Line is the line of key, or of the nearest enclosing key the file has
// (0: none).
func (d *Decoder) Line(key string) int {
	for {
		if l, ok := d.Lines[key]; ok {
			return l
		}
		if key == "" {
			return 0
		}
		key = parent(key)
	}
}

func parent(key string) string {
	if strings.HasSuffix(key, "]") {
		if i := strings.LastIndex(key, "["); i >= 0 {
			return key[:i]
		}
	}
	if i := strings.LastIndex(key, "."); i >= 0 {
		return key[:i]
	}
	return ""
}

func join(key, name string) string {
	if key == "" {
		return name
	}
	return key + "." + name
}

// resolve follows aliases and enters documents; nil is nothing at all.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && i < 64; i++ {
		switch n.Kind {
		case 0:
			return nil // an empty file: nothing given, every default kept
		case yaml.DocumentNode:
			if len(n.Content) == 0 {
				return nil
			}
			n = n.Content[0]
		case yaml.AliasNode:
			n = n.Alias
		default:
			return n
		}
	}
	return n
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" }

// maxDepth bounds how deep a value may nest (the types decoded are a few
// levels deep; the bound stops a runaway on a malformed type).
const maxDepth = 32

var (
	indexRE    = regexp.MustCompile(`\[\d+\]`)
	intLiteral = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)
)

func (d *Decoder) allowed(key string, t reflect.Type) string {
	if d.Allowed != nil {
		if a := d.Allowed(indexRE.ReplaceAllString(key, "[]")); a != "" {
			return a
		}
	}
	return describe(t)
}

func (d *Decoder) fail(n *yaml.Node, key string, t reflect.Type, format string, a ...any) *Error {
	return &Error{File: d.File, Line: n.Line, Key: key, Problem: fmt.Sprintf(format, a...), Allowed: d.allowed(key, t)}
}

func (d *Decoder) value(n *yaml.Node, key string, v reflect.Value, depth int) error {
	n = resolve(n)
	if n == nil || isNull(n) {
		return nil
	}
	if n.Kind == yaml.AliasNode || depth > maxDepth {
		return &Error{File: d.File, Line: n.Line, Key: key, Problem: "nests too deep"}
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Pointer:
		// An optional value or section: given, it is allocated and read.
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.value(n, key, v.Elem(), depth)
	case reflect.Struct:
		return d.section(n, key, v, depth)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Uint8 && d.Tag == "json" {
			return d.bytes(n, key, v)
		}
		if n.Kind != yaml.SequenceNode {
			return d.fail(n, key, t, "%s where a list belongs", what(n))
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, e := range n.Content {
			k := fmt.Sprintf("%s[%d]", key, i)
			d.Lines[k] = e.Line
			if err := d.value(e, k, s.Index(i), depth+1); err != nil {
				return err
			}
		}
		v.Set(s)
		return nil
	}
	if n.Kind != yaml.ScalarNode {
		return d.fail(n, key, t, "%s where a single value belongs", what(n))
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(n.Value)
	case reflect.Bool:
		b, ok := map[string]bool{"true": true, "false": false}[strings.ToLower(n.Value)]
		if n.ShortTag() != "!!bool" || !ok {
			return d.fail(n, key, t, "%s is not true or false", what(n))
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		mag, neg, problem := wholeNumber(n)
		if problem != "" {
			return d.fail(n, key, t, "%s %s", what(n), problem)
		}
		var x int64
		switch {
		case neg && mag > 1<<63, !neg && mag > math.MaxInt64:
			x = 0
			problem = "is too large"
			if neg {
				problem = "is too small"
			}
		case neg:
			x = -int64(mag-1) - 1
		default:
			x = int64(mag)
		}
		if problem == "" && v.OverflowInt(x) {
			problem = "is too large"
			if neg {
				problem = "is too small"
			}
		}
		if problem != "" {
			return d.fail(n, key, t, "%s %s", what(n), problem)
		}
		v.SetInt(x)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		mag, neg, problem := wholeNumber(n)
		switch {
		case problem != "":
		case neg && mag != 0:
			problem = "is negative"
		case v.OverflowUint(mag):
			problem = "is too large"
		}
		if problem != "" {
			return d.fail(n, key, t, "%s %s", what(n), problem)
		}
		v.SetUint(mag)
	case reflect.Float32, reflect.Float64:
		f, problem := number(n)
		if problem == "" && v.OverflowFloat(f) {
			problem = "is too large"
		}
		if problem != "" {
			return d.fail(n, key, t, "%s %s", what(n), problem)
		}
		v.SetFloat(f)
	default:
		return d.fail(n, key, t, "%s: a key of a type the reader does not know (%v)", what(n), t)
	}
	return nil
}

// section fills a struct from a mapping.
func (d *Decoder) section(n *yaml.Node, key string, v reflect.Value, depth int) error {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		return &Error{File: d.File, Line: n.Line, Key: key, Problem: what(n) + " where a section of keys belongs", Allowed: d.keysOf(key, t)}
	}
	fields := d.fields(t)
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := resolve(n.Content[i]), n.Content[i+1]
		if kn == nil || kn.Kind != yaml.ScalarNode {
			line := n.Line
			if kn != nil {
				line = kn.Line
			}
			return &Error{File: d.File, Line: line, Key: key, Problem: "a key that is not a name", Allowed: d.keysOf(key, t)}
		}
		name := kn.Value
		k := join(key, name)
		if first, ok := seen[name]; ok {
			return &Error{File: d.File, Line: kn.Line, Key: k, Problem: "given twice", Allowed: fmt.Sprintf("once; first at line %d", first)}
		}
		seen[name] = kn.Line
		f, ok := fields[name]
		if !ok {
			return &Error{File: d.File, Line: kn.Line, Key: k, Problem: "unknown key", Allowed: d.unknown(key, name, t)}
		}
		d.Lines[k] = kn.Line
		if err := d.value(vn, k, v.FieldByIndex(f), depth+1); err != nil {
			return err
		}
	}
	return nil
}

// bytes reads a JSON byte slice: base64, as encoding/json writes it.
func (d *Decoder) bytes(n *yaml.Node, key string, v reflect.Value) error {
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
		return &Error{File: d.File, Line: n.Line, Key: key, Problem: what(n) + " where bytes belong", Allowed: "a base64 string"}
	}
	b, err := base64.StdEncoding.DecodeString(n.Value)
	if err != nil {
		return &Error{File: d.File, Line: n.Line, Key: key, Problem: what(n) + " is not base64", Allowed: "a base64 string"}
	}
	v.SetBytes(b)
	return nil
}

// unknown is the advice on an unknown key: the known key at that level
// nearest to it, or one of that name elsewhere, or the level's keys.
func (d *Decoder) unknown(key, name string, t reflect.Type) string {
	names := d.names(t)
	if s := Suggest(name, names); s != "" {
		return fmt.Sprintf("did you mean %q?", join(key, s))
	}
	// The same name, or else a near one, in another section of the value
	// decoded: a key given in the wrong section.
	var same, near []string
	for _, k := range d.all {
		leaf := k[strings.LastIndex(k, ".")+1:]
		switch {
		case strings.Contains(k, "[]"):
		case leaf == name:
			same = append(same, k)
		case Suggest(name, []string{leaf}) != "":
			near = append(near, k)
		}
	}
	if len(same) == 0 {
		same = near
	}
	if len(same) > 0 {
		q := make([]string, min(len(same), 3))
		for i := range q {
			q[i] = strconv.Quote(same[i])
		}
		return "did you mean " + strings.Join(q, " or ") + "?"
	}
	return d.keysOf(key, t)
}

func (d *Decoder) keysOf(key string, t reflect.Type) string {
	where := key
	if where == "" {
		where = "the file"
	}
	return fmt.Sprintf("the keys of %s: %s", where, strings.Join(d.names(t), ", "))
}

func (d *Decoder) names(t reflect.Type) []string {
	var out []string
	for _, f := range d.visible(t) {
		out = append(out, f.name)
	}
	return out
}

func (d *Decoder) fields(t reflect.Type) map[string][]int {
	m := map[string][]int{}
	for _, f := range d.visible(t) {
		m[f.name] = f.index
	}
	return m
}

// field is a key of a struct: its name, its field's index path (through
// inlined structs) and type.
type field struct {
	name  string
	index []int
	typ   reflect.Type
}

// visible lists the keys of struct type t in order: its named fields, and
// the fields of the structs it inlines (`yaml:",inline"`) in their place.
func (d *Decoder) visible(t reflect.Type) []field {
	var out []field
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if d.inline(f) {
			for _, g := range d.visible(f.Type) {
				g.index = append(slices.Clone(f.Index), g.index...)
				out = append(out, g)
			}
			continue
		}
		if n, ok := d.name(f); ok {
			out = append(out, field{name: n, index: f.Index, typ: f.Type})
		}
	}
	return out
}

// inline reports whether f is a struct whose keys are its parent's.
func (d *Decoder) inline(f reflect.StructField) bool {
	_, opts, _ := strings.Cut(f.Tag.Get(d.Tag), ",")
	return f.Type.Kind() == reflect.Struct && slices.Contains(strings.Split(opts, ","), "inline")
}

func (d *Decoder) name(f reflect.StructField) (string, bool) {
	if !f.IsExported() {
		return "", false
	}
	tag := f.Tag.Get(d.Tag)
	name, _, _ := strings.Cut(tag, ",")
	switch {
	case name == "-":
		return "", false
	case name != "":
		return name, true
	case d.Tag == "yaml":
		return strings.ToLower(f.Name), true
	}
	return f.Name, true
}

// Keys lists every dotted key of a value of type t under prefix, sections
// and lists of sections entered ("[]" for a list's elements): for the "did
// you mean" of a key given in the wrong section.
func (d *Decoder) Keys(t reflect.Type, prefix string) []string {
	var out []string
	var walk func(t reflect.Type, key string, depth int)
	walk = func(t reflect.Type, key string, depth int) {
		if depth > 8 {
			return
		}
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		for t.Kind() == reflect.Slice && !(t.Elem().Kind() == reflect.Uint8 && d.Tag == "json") {
			t, key = t.Elem(), key+"[]"
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for _, f := range d.visible(t) {
			k := join(key, f.name)
			out = append(out, k)
			walk(f.typ, k, depth+1)
		}
	}
	walk(t, prefix, 0)
	return out
}

// what shows a node as the file has it: a scalar as written (strings
// quoted), a section or a list by its kind.
func what(n *yaml.Node) string {
	switch n.Kind {
	case 0:
		return "nothing"
	case yaml.MappingNode:
		return "a section"
	case yaml.SequenceNode:
		return "a list"
	}
	v := n.Value
	if r := []rune(v); len(r) > 40 {
		v = string(r[:37]) + "..."
	}
	if n.ShortTag() == "!!str" {
		return strconv.Quote(v)
	}
	return v
}

// describe is what a type takes, for errors of keys without a range.
func describe(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct:
		return "a section of keys"
	case reflect.Slice:
		return "a list of " + plural(describe(t.Elem()))
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Int8, reflect.Int16, reflect.Int32:
		bits := t.Bits()
		return fmt.Sprintf("a whole number %d..%d", -(int64(1) << (bits - 1)), int64(1)<<(bits-1)-1)
	case reflect.Uint, reflect.Uint64:
		return "a whole number ≥ 0"
	case reflect.Uint8, reflect.Uint16, reflect.Uint32:
		return fmt.Sprintf("a whole number 0..%d", uint64(1)<<t.Bits()-1)
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return t.String()
}

func plural(s string) string {
	for _, a := range [][2]string{{"a section of keys", "sections of keys"}, {"a string", "strings"},
		{"a whole number", "whole numbers"}, {"a number", "numbers"}, {"true or false", "true or false values"}, {"a list of", "lists of"}} {
		if rest, ok := strings.CutPrefix(s, a[0]); ok {
			return a[1] + rest
		}
	}
	return s
}

// wholeNumber reads an integer: a YAML integer (decimal, 0x, 0o, 0b,
// underscores), or a float that is a whole number (1e6). It returns the
// magnitude and the sign, or what is wrong.
func wholeNumber(n *yaml.Node) (mag uint64, neg bool, problem string) {
	switch n.ShortTag() {
	case "!!int":
		s := strings.ReplaceAll(n.Value, "_", "")
		if strings.HasPrefix(s, "-") {
			neg, s = true, s[1:]
		} else {
			s = strings.TrimPrefix(s, "+")
		}
		u, err := strconv.ParseUint(s, 0, 64)
		if err == nil {
			return u, neg, ""
		}
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			if neg {
				return 0, neg, "is too small"
			}
			return 0, neg, "is too large"
		}
		return 0, false, "is not a whole number"
	case "!!float":
		if intLiteral.MatchString(n.Value) {
			// An integer YAML could not hold in 64 bits.
			if strings.HasPrefix(n.Value, "-") {
				return 0, true, "is too small"
			}
			return 0, false, "is too large"
		}
		f, problem := number(n)
		switch {
		case problem != "":
			return 0, false, problem
		case f != math.Trunc(f):
			return 0, false, "is not a whole number"
		case f <= -(1 << 64):
			return 0, true, "is too small"
		case f >= 1<<64:
			return 0, false, "is too large"
		case f < 0:
			return uint64(-f), true, ""
		}
		return uint64(f), false, ""
	}
	return 0, false, "is not a whole number"
}

// number reads a finite number.
func number(n *yaml.Node) (float64, string) {
	switch n.ShortTag() {
	case "!!int":
		mag, neg, problem := wholeNumber(n)
		if problem != "" {
			return 0, problem
		}
		if neg {
			return -float64(mag), ""
		}
		return float64(mag), ""
	case "!!float":
		s := strings.ToLower(strings.ReplaceAll(n.Value, "_", ""))
		if slices.Contains([]string{".inf", "+.inf", "-.inf", ".nan"}, s) {
			return 0, "is not a finite number"
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
				return 0, "is too large"
			}
			return 0, "is not a number"
		}
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, "is not a finite number"
		}
		return f, ""
	}
	return 0, "is not a number"
}

// PlainKey is a key with its list indices written "[]", as Allowed gets
// it.
func PlainKey(key string) string { return indexRE.ReplaceAllString(key, "[]") }

// Check says whether a dotted key names a key of a value of type t: nil,
// or an error without a file or line, with the known key nearest to it.
func (d *Decoder) Check(t reflect.Type, key string) *Error {
	d.all = d.Keys(t, "")
	path := strings.Split(key, ".")
	for i, name := range path {
		at := strings.Join(path[:i], ".")
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return &Error{Key: key, Problem: fmt.Sprintf("%s is not a section", at), Allowed: "a key of a section"}
		}
		f, ok := d.fields(t)[name]
		if !ok {
			return &Error{Key: key, Problem: "unknown key", Allowed: d.unknown(at, name, t)}
		}
		t = t.FieldByIndex(f).Type
	}
	return nil
}

// Resolve is the node an alias stands for, or a document's content; nil
// for an empty document.
func Resolve(n *yaml.Node) *yaml.Node { return resolve(n) }
