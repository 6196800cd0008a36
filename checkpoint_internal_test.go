//go:build unix

package editguard

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sampleManifest(n int) *cpManifest {
	m := &cpManifest{StartNS: 1764133200123456789, Exclude: sha256Hex([]byte("x")), Index: strings.Repeat("ab", 20)}
	m.newFiles()
	for i := range n {
		e := cpEntry{Size: int64(i * 1000), MtimeNS: int64(i) << 40, CtimeNS: -int64(i), Ino: uint64(i) * 7, Mode: 0o100644, SHA256: sha256Hex(fmt.Appendf(nil, "%d", i))}
		if i%3 == 0 {
			e.Git = strings.Repeat(fmt.Sprintf("%x", i%16), 40)
			e.Backed = i%2 == 0
		}
		m.setFile(fmt.Sprintf("dir%d/sub/file-%d.txt", i%7, i), e)
	}
	m.seal()
	m.Unchecked = []string{"big.bin", "z/locked"}
	return m
}

func TestManifestRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 1000} {
		m := sampleManifest(n)
		data := m.marshal()
		got, err := unmarshalManifest(data)
		if err != nil {
			t.Fatalf("%d files: %v", n, err)
		}
		// What it decoded holds no slice of the file's bytes (it reads
		// them as a string without a copy).
		for i := range data {
			data[i] = 'X'
		}
		if !reflect.DeepEqual(filesOf(got), filesOf(m)) || got.numFiles() != n || got.StartNS != m.StartNS ||
			got.Exclude != m.Exclude || got.Index != m.Index || !reflect.DeepEqual(got.Unchecked, m.Unchecked) {
			t.Fatalf("%d files: decoded manifest differs", n)
		}
	}
}

// TestManifestRefusesDamage: every cut and every flipped byte of a
// manifest is refused, never half read.
func TestManifestRefusesDamage(t *testing.T) {
	data := sampleManifest(5).marshal()
	for i := range len(data) {
		if _, err := unmarshalManifest(data[:i]); err == nil {
			t.Fatalf("cut at %d of %d: accepted", i, len(data))
		}
		bad := bytes.Clone(data)
		bad[i] ^= 0x20
		if _, err := unmarshalManifest(bad); err == nil {
			t.Fatalf("byte %d flipped: accepted", i)
		}
	}
}

// TestManifestRefusesBadPaths: a manifest with a checksum that matches but
// a path that leaves the root, or sums of the wrong form, is refused.
func TestManifestRefusesBadPaths(t *testing.T) {
	for _, p := range []string{"../x", "a/../../x", "/etc/passwd", "a//b", "./a", "a/", "a\x00b", ""} {
		m := manifestOf(map[string]cpEntry{p: {SHA256: sha256Hex(nil)}})
		if _, err := unmarshalManifest(m.marshal()); err == nil {
			t.Errorf("path %q accepted", p)
		}
	}
	m := manifestOf(map[string]cpEntry{"a": {SHA256: strings.Repeat("G", 64)}})
	if _, err := unmarshalManifest(m.marshal()); err == nil {
		t.Error("a sum that is not hexadecimal accepted")
	}
}

func FuzzManifest(f *testing.F) {
	f.Add(sampleManifest(3).marshal())
	f.Add([]byte(manifestMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := unmarshalManifest(data)
		if err != nil {
			return
		}
		if !bytes.Equal(m.marshal(), data) {
			t.Fatal("a manifest that decodes does not encode back to the same bytes")
		}
	})
}

func BenchmarkManifest(b *testing.B) {
	m := sampleManifest(20000)
	data := m.marshal()
	b.Run("encode", func(b *testing.B) {
		for b.Loop() {
			m.marshal()
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := unmarshalManifest(data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// filesOf is every file of m.
func filesOf(m *cpManifest) map[string]cpEntry {
	out := map[string]cpEntry{}
	for p, e := range m.allFiles() {
		out[p] = e
	}
	return out
}

// manifestOf is a manifest of files.
func manifestOf(files map[string]cpEntry) *cpManifest {
	m := &cpManifest{}
	m.newFiles()
	for p, e := range files {
		m.setFile(p, e)
	}
	m.seal()
	return m
}

// TestSweepManifestsTemp: what a full manifest's write that never finished
// left (its temporary file) is removed by the next sweep once a minute
// old; a fresh one, which another process may be about to rename, stays.
func TestSweepManifestsTemp(t *testing.T) {
	dir := t.TempDir()
	w, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	manifests := filepath.Join(dir, StateDir, checkpointDir, "manifests")
	if err := os.MkdirAll(manifests, 0o700); err != nil {
		t.Fatal(err)
	}
	old, fresh := filepath.Join(manifests, ".tmp-old"), filepath.Join(manifests, ".tmp-fresh")
	for _, p := range []string{old, fresh} {
		if err := os.WriteFile(p, []byte("part of a manifest"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(-2 * time.Minute)
	os.Chtimes(old, then, then)
	cp, unlock, err := w.lockCheckpoints(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cp.sweepManifests()
	unlock()
	if _, err := os.Lstat(old); !os.IsNotExist(err) {
		t.Errorf("the stale temporary manifest is still there: %v", err)
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("the fresh temporary manifest was removed: %v", err)
	}
}
