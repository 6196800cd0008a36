package atomicfile

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func hashOf(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func openDirs(t *testing.T) (root string, a, b *Dir) {
	t.Helper()
	root = t.TempDir()
	for _, n := range []string{"a", "b"} {
		if err := os.Mkdir(filepath.Join(root, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	open := func(n string) *Dir {
		f, err := os.Open(filepath.Join(root, n))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return NewDir(f)
	}
	return root, open("a"), open("b")
}

func put(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

func content(t *testing.T, p string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func TestMove(t *testing.T) {
	t.Run("new name", func(t *testing.T) {
		root, a, b := openDirs(t)
		put(t, filepath.Join(root, "a/f"), "data")
		r, err := a.Move("f", hashOf([]byte("data")), b, "g", "", Options{})
		if err != nil || r.Strategy != MoveNew {
			t.Fatalf("Move = %+v, %v", r, err)
		}
		if _, ok := content(t, filepath.Join(root, "a/f")); ok {
			t.Error("source still there")
		}
		if got, _ := content(t, filepath.Join(root, "b/g")); got != "data" {
			t.Errorf("destination = %q", got)
		}
	})
	t.Run("destination appeared", func(t *testing.T) {
		root, a, b := openDirs(t)
		put(t, filepath.Join(root, "a/f"), "data")
		put(t, filepath.Join(root, "b/g"), "theirs")
		if _, err := a.Move("f", hashOf([]byte("data")), b, "g", "", Options{}); !errors.Is(err, ErrExist) {
			t.Fatalf("Move onto an existing name: %v, want ErrExist", err)
		}
		if got, _ := content(t, filepath.Join(root, "b/g")); got != "theirs" {
			t.Errorf("destination = %q", got)
		}
		if got, _ := content(t, filepath.Join(root, "a/f")); got != "data" {
			t.Errorf("source = %q", got)
		}
	})
	t.Run("source changed", func(t *testing.T) {
		root, a, b := openDirs(t)
		put(t, filepath.Join(root, "a/f"), "changed by someone")
		if _, err := a.Move("f", hashOf([]byte("data")), b, "g", "", Options{}); !errors.Is(err, ErrRaced) {
			t.Fatalf("Move of a changed source: %v, want ErrRaced", err)
		}
		if got, _ := content(t, filepath.Join(root, "a/f")); got != "changed by someone" {
			t.Errorf("source = %q, want it back in place", got)
		}
		if _, ok := content(t, filepath.Join(root, "b/g")); ok {
			t.Error("destination created")
		}
	})
	t.Run("overwrite", func(t *testing.T) {
		root, a, b := openDirs(t)
		put(t, filepath.Join(root, "a/f"), "data")
		put(t, filepath.Join(root, "b/g"), "old")
		r, err := a.Move("f", hashOf([]byte("data")), b, "g", hashOf([]byte("old")), Options{})
		if err != nil || (r.Strategy != MoveExchange && r.Strategy != MoveReplace) {
			t.Fatalf("Move = %+v, %v", r, err)
		}
		if _, ok := content(t, filepath.Join(root, "a/f")); ok {
			t.Error("source name still there")
		}
		if got, _ := content(t, filepath.Join(root, "b/g")); got != "data" {
			t.Errorf("destination = %q", got)
		}
	})
	t.Run("overwrite of a changed destination", func(t *testing.T) {
		root, a, b := openDirs(t)
		put(t, filepath.Join(root, "a/f"), "data")
		put(t, filepath.Join(root, "b/g"), "changed by someone")
		if _, err := a.Move("f", hashOf([]byte("data")), b, "g", hashOf([]byte("old")), Options{}); !errors.Is(err, ErrRaced) {
			t.Fatalf("Move over a changed destination: %v, want ErrRaced", err)
		}
		if got, _ := content(t, filepath.Join(root, "b/g")); got != "changed by someone" {
			t.Errorf("destination = %q, want it back", got)
		}
		if got, _ := content(t, filepath.Join(root, "a/f")); got != "data" {
			t.Errorf("source = %q, want it back", got)
		}
	})
}
