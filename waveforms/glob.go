package waveforms

import (
	"fmt"
	"strings"
)

// Filter selects signals by hierarchical path. A pattern is a dotted path in
// which * matches within one level, ** matches any number of levels and ?
// matches one character. A pattern selects a signal when it matches the
// signal's full path or one of its scopes, so "top.iommu" selects every signal
// of that block and "top.*.valid" every child's valid.
type Filter struct {
	include, exclude []string
	hidden           bool
}

// NewFilter builds a filter from comma-separated include patterns ("" selects
// everything) and exclude patterns. Signals whose name starts with an
// underscore at any level are hidden unless showHidden is set.
func NewFilter(include, exclude string, showHidden bool) (*Filter, error) {
	f := &Filter{hidden: showHidden}
	var err error
	if f.include, err = splitPatterns(include); err != nil {
		return nil, err
	}
	if f.exclude, err = splitPatterns(exclude); err != nil {
		return nil, err
	}
	return f, nil
}

func splitPatterns(s string) ([]string, error) {
	var out []string
	for _, p := range strings.Split(s, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		if strings.Contains(p, "***") || strings.HasPrefix(p, ".") || strings.HasSuffix(p, ".") || strings.Contains(p, "..") {
			return nil, fmt.Errorf("signal pattern %q: want dotted names with *, ** or ?", p)
		}
		out = append(out, p)
	}
	return out, nil
}

// Match reports whether the filter selects path.
func (f *Filter) Match(path string) bool {
	if f == nil {
		return !isHidden(path)
	}
	if !f.hidden && isHidden(path) {
		return false
	}
	if len(f.include) > 0 && !anyMatch(f.include, path) {
		return false
	}
	return !anyMatch(f.exclude, path)
}

func isHidden(path string) bool {
	return strings.HasPrefix(path, "_") || strings.Contains(path, "._")
}

func anyMatch(pats []string, path string) bool {
	for _, p := range pats {
		if matchPrefix(p, path) {
			return true
		}
	}
	return false
}

// matchPrefix matches p against path and against every scope of path.
func matchPrefix(p, path string) bool {
	for {
		if glob(p, path) {
			return true
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			return false
		}
		path = path[:i]
	}
}

// glob matches the whole of s against p.
func glob(p, s string) bool {
	for len(p) > 0 {
		switch {
		case strings.HasPrefix(p, "**"):
			rest := p[2:]
			for i := 0; i <= len(s); i++ {
				if glob(rest, s[i:]) {
					return true
				}
			}
			return false
		case p[0] == '*':
			rest := p[1:]
			for i := 0; i <= len(s); i++ {
				if glob(rest, s[i:]) {
					return true
				}
				if i < len(s) && s[i] == '.' {
					return false
				}
			}
			return false
		case p[0] == '?':
			if len(s) == 0 || s[0] == '.' {
				return false
			}
		default:
			if len(s) == 0 || s[0] != p[0] {
				return false
			}
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
