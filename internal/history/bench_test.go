package history

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
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
