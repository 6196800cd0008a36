package textcodec

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/textedit"
)

// BenchmarkEditLarge measures Decode+Apply+Encode of a 64 MiB file with one
// edit in the middle, in LF, CRLF and mixed line endings. Compare the CRLF
// and mixed figures with LF from the same run. alloc/size is the bytes
// allocated per operation divided by the file size: an upper bound on the
// extra memory an edit needs.
func BenchmarkEditLarge(b *testing.B) {
	const size = 64 << 20
	for _, style := range []string{"lf", "crlf", "mixed"} {
		b.Run(style, func(b *testing.B) {
			raw := largeFile(size, style)
			edit := []textedit.Edit{{Old: "line 00500000 ", New: "line 00500000 edited "}}
			b.SetBytes(int64(len(raw)))
			b.ReportAllocs()
			var ms0, ms1 runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms0)
			b.ResetTimer()
			for b.Loop() {
				d, err := Decode(raw, "")
				if err != nil {
					b.Fatal(err)
				}
				res, err := textedit.Apply(d.Text, edit)
				if err != nil {
					b.Fatal(err)
				}
				out, err := d.Encode(res.Text, "")
				if err != nil {
					b.Fatal(err)
				}
				if len(out) != len(raw)+len(" edited") {
					b.Fatalf("Encode() gave %d bytes, want %d", len(out), len(raw)+len(" edited"))
				}
			}
			b.StopTimer()
			runtime.ReadMemStats(&ms1)
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/float64(b.N)/float64(len(raw)), "alloc/size")
		})
	}
}

// largeFile returns about size bytes of numbered lines; "mixed" ends every
// eighth line with CRLF and the others with LF.
func largeFile(size int, style string) []byte {
	var sb strings.Builder
	sb.Grow(size + size/16)
	for i := 0; sb.Len() < size; i++ {
		fmt.Fprintf(&sb, "line %08d the quick brown fox jumps over the lazy dog", i)
		switch {
		case style == "crlf", style == "mixed" && i%8 == 0:
			sb.WriteString("\r\n")
		default:
			sb.WriteString("\n")
		}
	}
	return []byte(sb.String())
}
