package editguard_test

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/editguard/editguard"
)

// BenchmarkRecordedWrite compares a guarded Write with history and ledger
// (guarantees 4 and 5) against the same Write without them, in one run:
// compare the "recorded" and "unrecorded" ns/op at each size.
func BenchmarkRecordedWrite(b *testing.B) {
	for _, size := range []int{4 << 10, 1 << 20} {
		for _, recorded := range []bool{false, true} {
			name := fmt.Sprintf("size=%dKiB/unrecorded", size>>10)
			if recorded {
				name = fmt.Sprintf("size=%dKiB/recorded", size>>10)
			}
			b.Run(name, func(b *testing.B) {
				dir := b.TempDir()
				w, err := editguard.Open(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				editguard.SetUnrecorded(w, !recorded)
				s := w.NewSession("bench")
				// Distinct contents, so every history snapshot stores new bytes.
				contents := make([]string, 8)
				for i := range contents {
					contents[i] = string(bytes.Repeat([]byte(fmt.Sprintf("%07d line of text\n", i)), size/18+1)[:size])
				}
				if _, err := s.Write(ctx, "f.txt", contents[0], nil); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(size))
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.Write(ctx, "f.txt", contents[(i+1)%len(contents)]+fmt.Sprint(i), nil); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
