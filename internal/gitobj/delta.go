package gitobj

import (
	"errors"
	"fmt"
	"slices"
)

var errDelta = errors.New("gitobj: corrupt delta")

// applyDelta appends to dst[:0] the object that delta makes of base.
// The result may be at most limit bytes; a larger one is ErrTooLarge.
//
// A delta is the size of its base and that of its result, as deltaSize
// numbers, then instructions:
//
//	1xxxxxxx  copy from the base: the bits 0-3 say which bytes of a
//	          little-endian offset follow, the bits 4-6 which of a size;
//	          a size of 0 is 0x10000
//	0xxxxxxx  insert the next x bytes of the delta, 1 ≤ x ≤ 127
func applyDelta(dst, base, delta []byte, limit int64) ([]byte, error) {
	srcSize, delta, ok := deltaSize(delta)
	if !ok || srcSize != uint64(len(base)) {
		return nil, errDelta
	}
	size, delta, ok := deltaSize(delta)
	if !ok {
		return nil, errDelta
	}
	if size > uint64(clamp(limit)) {
		return nil, fmt.Errorf("gitobj: delta result of %d bytes: %w", size, ErrTooLarge)
	}
	out := slices.Grow(dst[:0], int(size))
	for len(delta) > 0 {
		c := delta[0]
		delta = delta[1:]
		switch {
		case c&0x80 != 0:
			var off, n uint64
			for i := range 7 {
				if c&(1<<i) == 0 {
					continue
				}
				if len(delta) == 0 {
					return nil, errDelta
				}
				if i < 4 {
					off |= uint64(delta[0]) << (8 * i)
				} else {
					n |= uint64(delta[0]) << (8 * (i - 4))
				}
				delta = delta[1:]
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || n > size-uint64(len(out)) {
				return nil, errDelta
			}
			out = append(out, base[off:off+n]...)
		case c != 0:
			n := int(c)
			if n > len(delta) || uint64(n) > size-uint64(len(out)) {
				return nil, errDelta
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, errDelta
		}
	}
	if uint64(len(out)) != size {
		return nil, errDelta
	}
	return out, nil
}

// deltaSize decodes a size at the start of a delta: seven bits a byte,
// least significant first. It returns the size and the rest of b, or false
// if b holds no such number below 2⁶³.
func deltaSize(b []byte) (uint64, []byte, bool) {
	var v uint64
	for i, c := range b {
		if i == 9 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c&0x80 == 0 {
			return v, b[i+1:], true
		}
	}
	return 0, nil, false
}
