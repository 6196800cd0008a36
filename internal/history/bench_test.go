package history

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkBaselineDurableWrite1MiB is the floor Save is measured against:
// the least a durable write of 1 MiB costs here (temp file, write, fsync,
// rename, directory fsync).
func BenchmarkBaselineDurableWrite1MiB(b *testing.B) {
	dir := b.TempDir()
	content := make([]byte, 1<<20)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		f, err := os.CreateTemp(dir, ".tmp-*")
		if err != nil {
			b.Fatal(err)
		}
		if _, err := f.Write(content); err != nil {
			b.Fatal(err)
		}
		if err := f.Sync(); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if err := os.Rename(f.Name(), filepath.Join(dir, "target")); err != nil {
			b.Fatal(err)
		}
		if err := syncDir(dir); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveNew1MiB saves 1 MiB that the store has not seen.
func BenchmarkSaveNew1MiB(b *testing.B) {
	s := openStore(b, &Options{MaxBytes: -1})
	content := make([]byte, 1<<20)
	b.SetBytes(int64(len(content)))
	var n uint64
	for b.Loop() {
		b.StopTimer()
		n++
		binary.LittleEndian.PutUint64(content, n)
		sum := sumOf(content) // the caller has already computed it
		b.StartTimer()
		if _, err := s.Save("big.bin", content, false, sum, Meta{Op: "write_file"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveDedup1MiB saves 1 MiB the store already holds: the object is
// compared and reused, only the index line is written and fsynced.
func BenchmarkSaveDedup1MiB(b *testing.B) {
	s := openStore(b, nil)
	content := make([]byte, 1<<20)
	sum := sumOf(content)
	mustSave(b, s, "big.bin", content, false)
	b.SetBytes(int64(len(content)))
	for b.Loop() {
		if _, err := s.Save("big.bin", content, false, sum, Meta{Op: "write_file"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveAbsent records "did not exist": one fsynced index line.
func BenchmarkSaveAbsent(b *testing.B) {
	s := openStore(b, nil)
	for b.Loop() {
		if _, err := s.Save("new.txt", nil, true, "", Meta{Op: "write_file"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenExisting is the cost every CLI invocation pays.
func BenchmarkOpenExisting(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "history")
	if _, err := openAt(dir, nil); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := openAt(dir, nil); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSaveFilesWithHistory saves new versions of files in a store where
// N files already have history, with KeepVersions 2, so most Saves also trim.
// Neither Save's mean nor its p99 (reported as p99-ns) may grow with N:
// retention looks only at the saved file, and no Save triggers a scan of
// the whole store unless the byte cap is reached.
func BenchmarkSaveFilesWithHistory(b *testing.B) {
	for _, files := range []int{10, 5000} {
		b.Run(fmt.Sprintf("files=%d", files), func(b *testing.B) {
			s := openStore(b, &Options{KeepVersions: 2})
			content := make([]byte, 1024)
			save := func(i, n int) {
				binary.LittleEndian.PutUint64(content, uint64(n))
				if _, err := s.Save(fmt.Sprintf("dir/f%05d.go", i), content, false, "", Meta{Op: "edit_file"}); err != nil {
					b.Fatal(err)
				}
				if s.OverCap() {
					b.Fatal("OverCap() = true well under the default cap")
				}
			}
			for i := range files {
				save(i, 1)
				save(i, 2)
			}
			var took []time.Duration
			n := 3
			for b.Loop() {
				t0 := time.Now()
				save(n%files, n)
				took = append(took, time.Since(t0))
				n++
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
		})
	}
}
