package input

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.yaml.in/yaml/v3"
)

// maxJSONDepth bounds how deep a JSON document may nest.
const maxJSONDepth = 64

// JSONTree reads a JSON document into a YAML node tree with the line of
// every value, so that a Decoder reads it as it reads YAML: strings are
// !!str, numbers !!int or !!float as written, true and false !!bool, null
// !!null. A syntax error is an *Error with its line.
func JSONTree(file string, data []byte) (*yaml.Node, error) {
	p := &jsonParser{file: file, data: data, dec: json.NewDecoder(bytes.NewReader(data)), line: 1}
	p.dec.UseNumber()
	n, err := p.value(0)
	if err != nil {
		return nil, err
	}
	if _, err := p.token(true); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, &Error{File: file, Line: p.line, Problem: "cannot be read as JSON: more after the value"}
		}
		return nil, err
	}
	return n, nil
}

type jsonParser struct {
	file      string
	data      []byte
	dec       *json.Decoder
	off, line int // line is the line of data[off]
}

// token reads the next token, noting the line it starts on; the end of the
// data is io.EOF when eofOK, else an error.
func (p *jsonParser) token(eofOK bool) (json.Token, error) {
	start := int(p.dec.InputOffset())
	for start < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[start]) >= 0 {
		start++
	}
	p.seek(start)
	t, err := p.dec.Token()
	if errors.Is(err, io.EOF) && !eofOK {
		err = io.ErrUnexpectedEOF
	}
	if err != nil && !errors.Is(err, io.EOF) {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			p.seek(int(se.Offset))
		}
		msg := strings.TrimPrefix(err.Error(), "json: ")
		if errors.Is(err, io.ErrUnexpectedEOF) {
			msg = "it ends before the value does"
		}
		return nil, &Error{File: p.file, Line: p.line, Problem: "cannot be read as JSON: " + msg}
	}
	return t, err
}

func (p *jsonParser) seek(off int) {
	off = min(max(off, 0), len(p.data))
	if off < p.off {
		p.off, p.line = 0, 1
	}
	p.line += bytes.Count(p.data[p.off:off], []byte{'\n'})
	p.off = off
}

func (p *jsonParser) value(depth int) (*yaml.Node, error) {
	t, err := p.token(depth == 0)
	if errors.Is(err, io.EOF) {
		return nil, &Error{File: p.file, Line: p.line, Problem: "cannot be read as JSON: no value"}
	}
	if err != nil {
		return nil, err
	}
	line := p.line
	if depth > maxJSONDepth {
		return nil, &Error{File: p.file, Line: line, Problem: fmt.Sprintf("cannot be read as JSON: nested more than %d deep", maxJSONDepth)}
	}
	switch t := t.(type) {
	case json.Delim:
		n := &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map", Line: line}
		if t == '[' {
			n.Kind, n.Tag = yaml.SequenceNode, "!!seq"
		}
		for p.dec.More() {
			if n.Kind == yaml.MappingNode {
				k, err := p.token(false)
				if err != nil {
					return nil, err
				}
				s, _ := k.(string)
				n.Content = append(n.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s, Line: p.line, Style: yaml.DoubleQuotedStyle})
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			n.Content = append(n.Content, v)
		}
		if _, err := p.token(false); err != nil { // the closing delimiter
			return nil, err
		}
		return n, nil
	case string:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: t, Line: line, Style: yaml.DoubleQuotedStyle}, nil
	case json.Number:
		tag := "!!int"
		if strings.ContainsAny(string(t), ".eE") {
			tag = "!!float"
		}
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: string(t), Line: line}, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!bool", Value: fmt.Sprint(t), Line: line}, nil
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: line}, nil
}
