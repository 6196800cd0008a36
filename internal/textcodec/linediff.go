package textcodec

import "sort"

// smallDiff bounds the size (len(a)*len(b)) of a region that has no unique
// lines to anchor on and is diffed by dynamic programming instead.
const smallDiff = 1 << 16

// matchSegments matches the lines of b to equal lines of a, in order (a
// patience diff: common ends, then lines unique in both sides as anchors,
// recursively). It returns, for each line of b, the index of its match in a
// or -1. Time is O(n log n) for typical input, memory O(n).
func matchSegments(a, b []string) []int {
	m := make([]int, len(b))
	for i := range m {
		m[i] = -1
	}
	type span struct{ a0, a1, b0, b1 int }
	stack := []span{{0, len(a), 0, len(b)}}
	for len(stack) > 0 {
		r := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for r.a0 < r.a1 && r.b0 < r.b1 && a[r.a0] == b[r.b0] {
			m[r.b0] = r.a0
			r.a0++
			r.b0++
		}
		for r.a0 < r.a1 && r.b0 < r.b1 && a[r.a1-1] == b[r.b1-1] {
			r.a1--
			r.b1--
			m[r.b1] = r.a1
		}
		if r.a0 == r.a1 || r.b0 == r.b1 {
			continue
		}
		anchors := uniqueAnchors(a[r.a0:r.a1], b[r.b0:r.b1])
		if len(anchors) == 0 {
			if (r.a1-r.a0)*(r.b1-r.b0) <= smallDiff {
				lcs(a[r.a0:r.a1], b[r.b0:r.b1], r.a0, r.b0, m)
			}
			continue
		}
		pa, pb := r.a0, r.b0
		for _, x := range anchors {
			ai, bi := r.a0+x[0], r.b0+x[1]
			m[bi] = ai
			stack = append(stack, span{pa, ai, pb, bi})
			pa, pb = ai+1, bi+1
		}
		stack = append(stack, span{pa, r.a1, pb, r.b1})
	}
	return m
}

// uniqueAnchors returns pairs {i, j} with a[i] == b[j] where the line occurs
// exactly once in a and once in b, keeping the longest subsequence that is
// increasing in both i and j.
func uniqueAnchors(a, b []string) [][2]int {
	type count struct{ na, nb, ia, ib int }
	seen := make(map[string]*count, len(a))
	for i, s := range a {
		c := seen[s]
		if c == nil {
			c = &count{}
			seen[s] = c
		}
		c.na++
		c.ia = i
	}
	var pairs [][2]int // in increasing j
	for j, s := range b {
		if c := seen[s]; c != nil {
			c.nb++
			c.ib = j
		}
	}
	for j, s := range b {
		if c := seen[s]; c != nil && c.na == 1 && c.nb == 1 {
			pairs = append(pairs, [2]int{c.ia, j})
		}
	}
	if len(pairs) == 0 {
		return nil
	}
	// Longest increasing subsequence of the a indexes (patience sorting).
	tails := []int{}                // tails[k]: index into pairs of the smallest tail of a run of length k+1
	prev := make([]int, len(pairs)) // predecessor in the run
	for p, x := range pairs {
		k := sort.Search(len(tails), func(k int) bool { return pairs[tails[k]][0] >= x[0] })
		if k > 0 {
			prev[p] = tails[k-1]
		} else {
			prev[p] = -1
		}
		if k == len(tails) {
			tails = append(tails, p)
		} else {
			tails[k] = p
		}
	}
	out := make([][2]int, len(tails))
	for p, k := tails[len(tails)-1], len(tails)-1; k >= 0; p, k = prev[p], k-1 {
		out[k] = pairs[p]
	}
	return out
}

// lcs matches a and b by a longest common subsequence, recording matches in
// m offset by a0 and b0. For small regions only: O(len(a)*len(b)).
func lcs(a, b []string, a0, b0 int, m []int) {
	n, w := len(a), len(b)
	t := make([]int32, (n+1)*(w+1))
	at := func(i, j int) int32 { return t[i*(w+1)+j] }
	for i := n - 1; i >= 0; i-- {
		for j := w - 1; j >= 0; j-- {
			v := max(at(i+1, j), at(i, j+1))
			if a[i] == b[j] {
				v = max(v, at(i+1, j+1)+1)
			}
			t[i*(w+1)+j] = v
		}
	}
	for i, j := 0, 0; i < n && j < w; {
		switch {
		case a[i] == b[j] && at(i, j) == at(i+1, j+1)+1:
			m[b0+j] = a0 + i
			i++
			j++
		case at(i+1, j) >= at(i, j+1):
			i++
		default:
			j++
		}
	}
}
