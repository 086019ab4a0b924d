// Package suggest finds the names nearest to a misspelt one, for the "did
// you mean" of an error message: a scenario's unknown key or value, a
// rule's unknown metric or function.
//
// Nearness is the optimal string alignment distance, also called the
// restricted Damerau–Levenshtein distance (F. J. Damerau, "A technique
// for computer detection and correction of spelling errors", CACM 7(3),
// 1964, who found most misspellings one such slip): the fewest single-character insertions, deletions, substitutions and
// transpositions of two adjacent characters that turn one name into the
// other, no substring being edited twice. It is computed over runes,
// ignoring case, with the recurrence, for a of length m and b of length n,
//
//	d(i, 0) = i, d(0, j) = j
//	d(i, j) = min(d(i−1, j) + 1, d(i, j−1) + 1, d(i−1, j−1) + [a_i ≠ b_j],
//	              d(i−2, j−2) + 1 if a_i = b_{j−1} and a_{i−1} = b_j)
//
// and Distance(a, b) = d(m, n). A transposition ("inflgiht") counts as one
// slip, as a typist makes it, where plain Levenshtein counts two.
//
// A misspelling plausibly has Limit(word) = max(1, ⌊runes/3⌋) slips; a
// caller may ask for fewer (a one-letter slip first) or allow more.
package suggest

import "strings"

// MaxLen bounds the words Nearest compares, in bytes: a longer word is no
// plausible misspelling, and its distance table would be large.
const MaxLen = 64

// Distance is the optimal string alignment distance between a and b,
// ignoring case (see the package comment).
func Distance(a, b string) int {
	s, t := []rune(strings.ToLower(a)), []rune(strings.ToLower(b))
	// d[i][j] is the distance between s[:i] and t[:j].
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// Limit is how many slips a misspelling of word may plausibly have: one
// per three letters, at least one.
func Limit(word string) int {
	return max(1, len([]rune(word))/3)
}

// Nearest returns the candidates nearest to word, all at the same least
// Distance, in the order of candidates; nil when none is within maxDist
// or word is longer than MaxLen. A caller wanting one takes the first.
func Nearest(word string, candidates []string, maxDist int) []string {
	if len(word) > MaxLen {
		return nil
	}
	var best []string
	bestDist := maxDist + 1
	for _, c := range candidates {
		switch d := Distance(word, c); {
		case d > maxDist:
		case d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	return best
}
