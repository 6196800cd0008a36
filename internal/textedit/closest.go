package textedit

import (
	"slices"
	"sort"
	"strings"
	"unicode/utf8"
)

// Closest returns up to n lines of text most like old, best first, for a
// "did you mean" hint. It compares old's most distinctive line (its longest
// non-blank line, trimmed) with every line of text: a linear pass scores
// shared byte pairs, then the best candidates are ranked by normalised edit
// distance. Lines less than 40% similar are left out. Memory is O(n) beyond
// text; lines longer than maxLine characters are cut in the result.
func Closest(text, old string, n int) []Line {
	key := longestLine(old)
	if key == "" || n <= 0 {
		return nil
	}
	seen := make([]int32, 1<<16)
	keyPairs := distinctPairs(key, seen)
	best := rankPrecisely(key, cheapCandidates(text, keyPairs, seen))
	var out []Line
	for _, c := range best {
		if c.score < 0.4 || len(out) == n {
			break
		}
		out = append(out, Line{Number: c.line, Text: cutLine(c.text)})
	}
	return out
}

// closestCand is a line of text that may be like the key, with its score.
type closestCand struct {
	line  int
	text  string
	score float64
}

// closestPool is how many lines the cheap pass keeps for the precise one.
const closestPool = 32

// longestLine returns old's longest non-blank line, trimmed: the line most
// likely to be distinctive, which is the one compared with text.
func longestLine(old string) string {
	key := ""
	for _, l := range strings.Split(old, "\n") {
		if t := strings.TrimSpace(l); len(t) > len(key) {
			key = t
		}
	}
	return key
}

// distinctPairs returns the distinct byte pairs of key, the set each line's
// pairs are counted against. seen, indexed by pair, is all zeros before
// and after: the cheap pass then stamps in it, per pair, the last line that
// had it.
func distinctPairs(key string, seen []int32) []uint16 {
	var keyPairs []uint16
	for i := 0; i+1 < len(key); i++ {
		p := uint16(key[i])<<8 | uint16(key[i+1])
		if seen[p] != -1 {
			seen[p] = -1
			keyPairs = append(keyPairs, p)
		}
	}
	clear(seen)
	return keyPairs
}

// cheapCandidates is the cheap pass, linear in text: it keeps the best few
// lines by the share of key's byte pairs they contain (so that a fragment
// of a long line still finds it), shorter lines first on ties, so that the
// costly edit distance is computed for those few only.
func cheapCandidates(text string, keyPairs []uint16, seen []int32) []closestCand {
	var best []closestCand
	lineNo := 0
	for rest := text; len(rest) > 0 || lineNo == 0; {
		lineNo++
		l := rest
		if i := strings.IndexByte(rest, '\n'); i >= 0 {
			l, rest = rest[:i], rest[i+1:]
		} else {
			rest = ""
		}
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		stamp := int32(lineNo)
		for i := 0; i+1 < len(t); i++ {
			seen[uint16(t[i])<<8|uint16(t[i+1])] = stamp
		}
		shared := 0
		for _, p := range keyPairs {
			if seen[p] == stamp {
				shared++
			}
		}
		score := float64(shared)/float64(max(1, len(keyPairs))) - float64(len(t))*1e-9
		if len(best) < closestPool || score > best[len(best)-1].score {
			best = insertCand(best, closestCand{lineNo, l, score})
		}
	}
	return best
}

// insertCand puts c into best, which is sorted by falling score, after
// those of equal score, and drops what falls beyond closestPool, so that
// the pool stays sorted and bounded as the pass goes.
func insertCand(best []closestCand, c closestCand) []closestCand {
	k := sort.Search(len(best), func(k int) bool { return best[k].score < c.score })
	best = append(best, closestCand{})
	copy(best[k+1:], best[k:])
	best[k] = c
	if len(best) > closestPool {
		best = best[:closestPool]
	}
	return best
}

// rankPrecisely is the precise pass: it scores the candidates again by
// normalised edit distance on the trimmed lines and sorts them best first,
// earlier lines first on ties, which is the order of the result.
func rankPrecisely(key string, best []closestCand) []closestCand {
	for k := range best {
		t := strings.TrimSpace(best[k].text)
		best[k].score = similarity(key, t)
		if utf8.RuneCountInString(key) >= 8 {
			// key may be a fragment of the line.
			best[k].score = max(best[k].score, 0.9*partialSimilarity(key, t))
		}
	}
	sort.SliceStable(best, func(i, j int) bool {
		if best[i].score != best[j].score {
			return best[i].score > best[j].score
		}
		return best[i].line < best[j].line
	})
	return best
}

// similarity is 1 - levenshtein(a, b)/max(len(a), len(b)) over runes,
// comparing at most the first 500 runes of each.
func similarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 500)], rb[:min(len(rb), 500)]
	if len(ra) == 0 && len(rb) == 0 {
		return 1
	}
	row0 := make([]int, len(rb)+1)
	for j := range row0 {
		row0[j] = j
	}
	last := distanceRows(ra, rb, row0)
	return 1 - float64(last[len(rb)])/float64(max(len(ra), len(rb)))
}

// partialSimilarity is 1 - d/len(a), where d is the edit distance between a
// and the substring of b most like it (free gaps at both ends of b).
func partialSimilarity(a, b string) float64 {
	ra, rb := []rune(a), []rune(b)
	ra, rb = ra[:min(len(ra), 500)], rb[:min(len(rb), 2000)]
	if len(ra) == 0 {
		return 1
	}
	last := distanceRows(ra, rb, make([]int, len(rb)+1)) // row 0 all zeros: b may start anywhere
	return 1 - float64(slices.Min(last))/float64(len(ra))
}

// distanceRows runs the edit-distance recurrence of a against b from row
// 0, which the caller gives (0 to len(b) for the distance of whole
// strings, all zeros for free gaps at b's start), and returns the last
// row: the distances of all of a to each prefix of b.
func distanceRows(ra, rb []rune, prev []int) []int {
	cur := make([]int, len(rb)+1)
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			c := 1
			if ra[i-1] == rb[j-1] {
				c = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+c)
		}
		prev, cur = cur, prev
	}
	return prev
}
