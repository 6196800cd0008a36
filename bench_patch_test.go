//go:build unix

package editguard_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/editguard/editguard"
)

// BenchmarkPatchAgainstEdits compares one apply_patch that changes n
// files with n edit_file calls making the same changes, in one directory.
// The patch is all or nothing across a crash, so it costs a journal; the
// rest of its fsyncs should be shared across its files, not paid per file.
// Count the fsyncs with
//
//	go test -c -o /tmp/eg.test . && strace -f -c -e trace=fsync,fdatasync,syncfs \
//	  /tmp/eg.test -test.run '^$' -test.bench 'PatchAgainstEdits/n=10/patch' -test.benchtime 50x
func BenchmarkPatchAgainstEdits(b *testing.B) {
	for _, n := range []int{1, 10, 50} {
		for _, kind := range []string{"patch", "edits"} {
			b.Run(fmt.Sprintf("n=%d/%s", n, kind), func(b *testing.B) {
				w, dir := newWorkspace(b)
				s := w.NewSession("bench")
				for i := range n {
					writeFile(b, dir, fmt.Sprintf("f%02d.txt", i), textOfSize(4<<10, "0"))
					if _, err := s.Read(ctx, fmt.Sprintf("f%02d.txt", i), nil); err != nil {
						b.Fatal(err)
					}
				}
				v := 0
				for b.Loop() {
					from, to := fmt.Sprintf("version %d", v), fmt.Sprintf("version %d", v+1)
					if kind == "patch" {
						var p strings.Builder
						p.WriteString("*** Begin Patch\n")
						for i := range n {
							fmt.Fprintf(&p, "*** Update File: f%02d.txt\n@@\n-%s\n+%s\n", i, from, to)
						}
						p.WriteString("*** End Patch\n")
						if _, err := s.ApplyPatch(ctx, p.String(), nil); err != nil {
							b.Fatal(err)
						}
					} else {
						for i := range n {
							if _, err := s.Edit(ctx, fmt.Sprintf("f%02d.txt", i), []editguard.Edit{{OldString: from, NewString: to}}, nil); err != nil {
								b.Fatal(err)
							}
						}
					}
					v++
				}
			})
		}
	}
}
