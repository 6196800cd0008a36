//go:build unix

package editguard_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"golang.org/x/sys/unix"
)

// benchSizes are the file sizes the write path is measured at.
var benchSizes = []struct {
	name string
	size int
}{
	{"4KiB", 4 << 10},
	{"1MiB", 1 << 20},
	{"16MiB", 16 << 20},
}

// textOfSize returns distinct text lines totalling size bytes; tag makes two
// versions differ in their first line only.
func textOfSize(size int, tag string) string {
	var b strings.Builder
	b.Grow(size)
	fmt.Fprintf(&b, "version %s\n", tag)
	for i := 0; b.Len() < size; i++ {
		fmt.Fprintf(&b, "line %08d: the quick brown fox jumps over the lazy dog\n", i)
	}
	return b.String()[:size-1] + "\n"
}

// BenchmarkGuardCheck measures what the guard adds before a commit: open the
// target without following symlinks, fstat, read, SHA-256, and compare with
// the baseline, through the same atomicfile.Dir.ReadFile the core uses.
func BenchmarkGuardCheck(b *testing.B) {
	for _, bs := range benchSizes {
		b.Run(bs.name, func(b *testing.B) {
			dir := b.TempDir()
			data := []byte(textOfSize(bs.size, "a"))
			if err := os.WriteFile(filepath.Join(dir, "f.txt"), data, 0o644); err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256(data)
			want := hex.EncodeToString(sum[:])
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			ad := atomicfile.NewDir(d)
			b.SetBytes(int64(bs.size))
			for b.Loop() {
				st, _, got, err := ad.ReadFile("f.txt", 0)
				if err != nil || !st.Regular() || got != want {
					b.Fatalf("ReadFile = %v, %q, %v", st, got, err)
				}
			}
		})
	}
}

// BenchmarkWrite compares a guarded Session.Write with the bare crash-safe
// write it is built on (temp file, write, fsync, rename, directory fsync),
// in the same run. The guarded write adds the lock, the check, encoding,
// the diff, the placeholder check, the history snapshot and the ledger
// record. "guarded-noplaceholder" sets AllowPlaceholders, skipping the
// placeholder check.
func BenchmarkWrite(b *testing.B) {
	for _, bs := range benchSizes[:2] {
		versions := [2]string{textOfSize(bs.size, "a"), textOfSize(bs.size, "b")}
		b.Run("bare/"+bs.name, func(b *testing.B) {
			dir := b.TempDir()
			d, err := os.Open(dir)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			b.SetBytes(int64(bs.size))
			i := 0
			for b.Loop() {
				if err := bareWrite(d, dir, "f.txt", []byte(versions[i%2])); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		for _, mode := range []string{"guarded", "guarded-noplaceholder"} {
			b.Run(mode+"/"+bs.name, func(b *testing.B) {
				dir := b.TempDir()
				w, err := editguard.Open(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				defer w.Close()
				s := w.NewSession("bench")
				opts := &editguard.WriteOptions{AllowPlaceholders: mode == "guarded-noplaceholder"}
				if _, err := s.Write(ctx, "f.txt", versions[1], opts); err != nil {
					b.Fatal(err)
				}
				b.SetBytes(int64(bs.size))
				i := 0
				for b.Loop() {
					if _, err := s.Write(ctx, "f.txt", versions[i%2], opts); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// bareWrite is the minimal crash-safe replace: without the file fsync a
// crash after the rename can leave an empty file, without the directory
// fsync the rename itself may not survive.
func bareWrite(d *os.File, dir, name string, data []byte) error {
	tmp := filepath.Join(dir, "."+name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	return unix.Fsync(int(d.Fd()))
}
