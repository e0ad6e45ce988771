package input

import "strings"

// Suggest returns the known name nearest to name, when it is near enough to
// be a slip (an edit or two, a case difference), or "".
func Suggest(name string, known []string) string {
	best, bestD := "", -1
	for _, k := range known {
		d := distance(strings.ToLower(name), strings.ToLower(k))
		if d == 0 && name != k {
			d = 1 // a case difference is still a slip
		}
		if bestD < 0 || d < bestD {
			best, bestD = k, d
		}
	}
	if bestD < 0 || bestD > slack(name) {
		return ""
	}
	return best
}

// slack is how many edits a name of that length can take and still be a
// slip of a key: one for short names, two from six letters, three from
// twelve.
func slack(name string) int {
	switch n := len([]rune(name)); {
	case n >= 12:
		return 3
	case n >= 6:
		return 2
	}
	return 1
}

// distance is the optimal string alignment distance: insertions,
// deletions, substitutions and swaps of neighbours, each one edit.
func distance(a, b string) int {
	r, s := []rune(a), []rune(b)
	if len(r) > 64 || len(s) > 64 {
		if a == b {
			return 0
		}
		return 1 << 30 // too long to be a slip of any key
	}
	prev2 := make([]int, len(s)+1)
	prev := make([]int, len(s)+1)
	cur := make([]int, len(s)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(r); i++ {
		cur[0] = i
		for j := 1; j <= len(s); j++ {
			cost := 1
			if r[i-1] == s[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && r[i-1] == s[j-2] && r[i-2] == s[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(s)]
}
