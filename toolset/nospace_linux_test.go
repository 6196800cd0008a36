//go:build linux

package toolset_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// TestNoSpaceSaysHowMuch: on a full file system, write_file's NO_SPACE
// carries the bytes needed and available in its text for the model and
// in the error object (what --json prints and _meta holds).
func TestNoSpaceSaysHowMuch(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, "size=1m,mode=0755"); err != nil {
		t.Skipf("cannot mount a tmpfs here: %v", err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	ws, err := editguard.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.Close() })
	ts := newToolset(ws, nil)
	f, err := os.Create(filepath.Join(dir, "filler.bin"))
	if err != nil {
		t.Fatal(err)
	}
	for buf := make([]byte, 4096); ; {
		if _, err := f.Write(buf); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatal(err)
			}
			break
		}
	}
	f.Close()

	content, _ := json.Marshal(strings.Repeat("x", 512<<10))
	e := wantCode(t, ts, "write_file", `{"path":"big.txt","content":`+string(content)+`}`, editguard.CodeNoSpace)
	text := toolset.ErrorText(e)
	for _, k := range []string{"needed_bytes: ", "available_bytes: ", "freed_bytes: "} {
		if !strings.Contains(text, k) {
			t.Errorf("error text does not say %s:\n%s", k, text)
		}
	}
	var obj struct {
		Code    string         `json:"code"`
		Details map[string]any `json:"details"`
	}
	b, _ := json.Marshal(e)
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatal(err)
	}
	need, _ := obj.Details["needed_bytes"].(float64)
	avail, _ := obj.Details["available_bytes"].(float64)
	if obj.Code != "NO_SPACE" || need < 512<<10 || avail >= need {
		t.Errorf("error object %s: want NO_SPACE with needed_bytes ≥ %d above available_bytes", b, 512<<10)
	}
	if _, err := os.Lstat(filepath.Join(dir, "big.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("big.txt exists after the refusal (%v)", err)
	}
}
