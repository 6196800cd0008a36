//go:build linux

package durability_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/atomicfile"
	"github.com/editguard/editguard/internal/history"
	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/testutil"
	"golang.org/x/sys/unix"
)

// A fault is one failure injected into one step of the commit. install
// arranges it through the packages' hooks; the returned function reports
// whether the fault fired.
type fault struct {
	name string
	// step is the Details["step"] the caller must see.
	step string
	// committed: the fault comes after the swap, so the target must hold
	// the new content; otherwise it must hold the old.
	committed bool
	// leaksTemp: the displaced file is left under the temporary name (only
	// when the directory fsync after the swap fails; the next commit to the
	// target removes it).
	leaksTemp bool
	// outcomeLost: the write of the attempt's outcome record fails, so
	// the ledger holds only the change's intent, and an error must say so.
	// The next Open appends the outcome, judged from the file.
	outcomeLost bool
	// large: the displaced content is over the history's inline limit, so
	// it is saved as an object file.
	large bool
	// medium: the old content is larger than an intent carries but small
	// enough to be kept in its history index line, durably.
	medium bool
	// huge: the old content is large enough to be linked into history
	// under a lease rather than copied (held.go).
	huge bool
	// newFile: the fault is injected while creating the file.
	newFile bool
	// warning: for a committed change, what its warning must say.
	warning string
	install func(fired *int)
}

func isDirFD(fd int) bool {
	var st unix.Stat_t
	return unix.Fstat(fd, &st) == nil && st.Mode&unix.S_IFMT == unix.S_IFDIR
}

// onAtomic fails the first system call of the swap that match selects.
// The calls may come from two goroutines at once: a held file is linked
// into history while the new content is written.
func onAtomic(err error, match func(c *atomicfile.Call) bool) func(*int) {
	return func(fired *int) {
		var mu sync.Mutex
		faultAtomic = func(c *atomicfile.Call) error {
			mu.Lock()
			defer mu.Unlock()
			if *fired == 0 && match(c) {
				*fired++
				return err
			}
			return nil
		}
	}
}

// onHistory fails the first step of history.Save named op on a file whose
// path contains where ("/objects/" or "/index/").
func onHistory(err error, op, where string) func(*int) {
	return func(fired *int) {
		faultHistory = func(o, name string) error {
			if *fired == 0 && o == op && strings.Contains(name, where) {
				*fired++
				return err
			}
			return nil
		}
	}
}

// onLedger fails the nth ledger step op of the write (1: the intent's,
// 2: the outcome's).
func onLedger(err error, op string, nth int) func(*int) {
	return func(fired *int) {
		seen := 0
		faultLedger = func(o, name string) error {
			if o != op {
				return nil
			}
			if seen++; *fired == 0 && seen == nth {
				*fired++
				return err
			}
			return nil
		}
	}
}

func isTempCreate(c *atomicfile.Call) bool {
	return c.Op == "openat" && c.Flags&unix.O_EXCL != 0 && atomicfile.IsTemp(c.Name)
}

func isTempWrite(c *atomicfile.Call) bool {
	return c.Op == "write" && strings.HasSuffix(testutil.FDPath(c.FD), ".egtmp")
}

func faults() []fault {
	exchange := func(c *atomicfile.Call) bool {
		return c.Op == "renameat2" && c.Flags&unix.RENAME_EXCHANGE != 0
	}
	var fs []fault
	for _, e := range []syscall.Errno{unix.EACCES, unix.ENOSPC} {
		fs = append(fs, fault{name: "create temp/" + e.Error(), step: "create temp", install: onAtomic(e, isTempCreate)})
	}
	fs = append(fs,
		fault{name: "write/ENOSPC", step: "write", install: onAtomic(unix.ENOSPC, isTempWrite)},
		// The kernel writes part of the buffer, then the disk is full.
		fault{name: "write/short then ENOSPC", step: "write", install: func(fired *int) {
			faultAtomic = func(c *atomicfile.Call) error {
				if !isTempWrite(c) {
					return nil
				}
				*fired++
				if *fired == 1 {
					c.Data = c.Data[:1]
					return nil
				}
				return unix.ENOSPC
			}
		}},
		// The kernel writes part of the buffer, then nothing.
		fault{name: "write/short then zero", step: "write", install: func(fired *int) {
			faultAtomic = func(c *atomicfile.Call) error {
				if !isTempWrite(c) {
					return nil
				}
				*fired++
				if *fired == 1 {
					c.Data = c.Data[:2]
				} else {
					c.Data = c.Data[:0]
				}
				return nil
			}
		}},
		fault{name: "chmod/EPERM", step: "chmod", install: onAtomic(unix.EPERM, func(c *atomicfile.Call) bool { return c.Op == "fchmod" })},
		fault{name: "fsync/EIO", step: "fsync", install: onAtomic(unix.EIO, func(c *atomicfile.Call) bool {
			return c.Op == "fsync" && !isDirFD(c.FD)
		})},
	)
	for _, e := range []syscall.Errno{unix.EXDEV, unix.EACCES, unix.EBUSY} {
		fs = append(fs, fault{name: "exchange/" + e.Error(), step: "exchange", install: onAtomic(e, exchange)})
	}
	fs = append(fs,
		fault{name: "fsync dir/EIO", step: "fsync dir", committed: true, leaksTemp: true, warning: "fsync dir",
			install: onAtomic(unix.EIO, func(c *atomicfile.Call) bool {
				// The target's directory, not one editguard makes for its state.
				return c.Op == "fsync" && isDirFD(c.FD) && !strings.Contains(testutil.FDPath(c.FD), "/"+editguard.StateDir)
			})},
		fault{name: "history object write/ENOSPC", step: "history", large: true, install: onHistory(unix.ENOSPC, "write", "/objects/")},
		fault{name: "history object create/ENOSPC", step: "history", large: true, install: onHistory(unix.ENOSPC, "create", "/objects/")},
		fault{name: "history object fsync/EIO", step: "history", large: true, install: onHistory(unix.EIO, "fsync", "/objects/")},
		fault{name: "history object rename/EIO", step: "history", large: true, install: onHistory(unix.EIO, "rename", "/objects/")},
		fault{name: "history objects dir fsync/EIO", step: "history", large: true, install: onHistory(unix.EIO, "fsync dir", "/objects/")},
		fault{name: "history index write/ENOSPC", step: "history", install: onHistory(unix.ENOSPC, "write", "/index/")},
		fault{name: "history index fsync/EIO", step: "history", medium: true, install: onHistory(unix.EIO, "fsync", "/index/")},
		fault{name: "history index dir fsync/EIO", step: "history", medium: true, install: onHistory(unix.EIO, "fsync dir", "/index")},
		// A small old content is carried by the intent, and its index
		// line is fsynced before the change only if the intent's fsync
		// failed.
		fault{name: "ledger intent fsync/EIO and history index fsync/EIO", step: "history", install: func(fired *int) {
			onLedger(unix.EIO, "fsync", 1)(new(int))
			onHistory(unix.EIO, "fsync", "/index/")(fired)
		}},
		// Without its intent the change goes on, and its outcome record is
		// made durable before the change is reported.
		fault{name: "ledger intent write/EIO", committed: true, install: onLedger(unix.EIO, "write", 1)},
		fault{name: "ledger intent fsync/EIO", committed: true, install: onLedger(unix.EIO, "fsync", 1)},
		fault{name: "ledger write/EIO", step: "ledger append", committed: true, outcomeLost: true, warning: "appending it to the ledger failed", install: onLedger(unix.EIO, "write", 2)},
		// The commit fails and so does the ledger append recording that.
		fault{name: "exchange/EXDEV and ledger write/EIO", step: "exchange", outcomeLost: true, install: func(fired *int) {
			onAtomic(unix.EXDEV, exchange)(fired)
			onLedger(unix.EIO, "write", 2)(new(int))
		}},
		// A new file commits with a no-replace rename.
		fault{name: "new file rename/EACCES", step: "rename", newFile: true, install: onAtomic(unix.EACCES, func(c *atomicfile.Call) bool {
			return c.Op == "renameat2" && c.Flags&unix.RENAME_NOREPLACE != 0
		})},
		fault{name: "new file create temp/ENOSPC", step: "create temp", newFile: true, install: onAtomic(unix.ENOSPC, isTempCreate)},
		// A large old content is linked into history under a lease. A
		// failed link falls back to a copy; a change that does not swap,
		// or leaves the old file a second name, makes the object a copy.
		fault{name: "held: exchange/EBUSY", step: "exchange", huge: true, install: onAtomic(unix.EBUSY, exchange)},
		// The held file is unlinked before the directory's fsync (one
		// fsync covers the exchange and the removal), so a failed fsync
		// leaves no temporary name: the displaced bytes are history's.
		fault{name: "held: fsync dir/EIO", step: "fsync dir", huge: true, committed: true, warning: "fsync dir",
			install: onAtomic(unix.EIO, func(c *atomicfile.Call) bool {
				return c.Op == "fsync" && isDirFD(c.FD) && !strings.Contains(testutil.FDPath(c.FD), "/"+editguard.StateDir)
			})},
		fault{name: "held: link/EIO", huge: true, committed: true, install: onAtomic(unix.EIO, func(c *atomicfile.Call) bool { return c.Op == "linkat" })},
		fault{name: "held: history link/EIO", huge: true, committed: true, install: onHistory(unix.EIO, "link", "/objects/")},
		fault{name: "held: history object rename/EIO", huge: true, committed: true, install: onHistory(unix.EIO, "rename", "/objects/")},
		fault{name: "held: history objects dir fsync/EIO", huge: true, committed: true, install: onHistory(unix.EIO, "fsync dir", "/objects/")},
		fault{name: "held: ledger intent fsync/EIO", huge: true, committed: true, install: onLedger(unix.EIO, "fsync", 1)},
		fault{name: "held: ledger write/EIO", step: "ledger append", huge: true, committed: true, outcomeLost: true, warning: "appending it to the ledger failed", install: onLedger(unix.EIO, "write", 2)},
		fault{name: "new file history index fsync/EIO", step: "history", newFile: true, install: func(fired *int) {
			onLedger(unix.EIO, "fsync", 1)(new(int))
			onHistory(unix.EIO, "fsync", "/index/")(fired)
		}},
	)
	return fs
}

// codeFor is the error code a fault named by its errno must produce: full
// disks and permission failures have codes of their own.
func codeFor(name string) editguard.Code {
	switch {
	case strings.Contains(name, "ENOSPC") || strings.Contains(name, "no space"):
		return editguard.CodeNoSpace
	case strings.Contains(name, "EACCES") || strings.Contains(name, "EPERM") || strings.Contains(name, "permission denied") || strings.Contains(name, "operation not permitted"):
		return editguard.CodePermission
	}
	return editguard.CodeIO
}

// The hooks a fault's install sets; installFaults puts them on a workspace.
var (
	faultAtomic  atomicfile.Hook
	faultHistory history.Hook
	faultLedger  ledger.Hook
)

func installFaults(w *editguard.Workspace) {
	testutil.SetFaults(w, faultAtomic, faultHistory, faultLedger)
}

func clearHooks() {
	faultAtomic, faultHistory, faultLedger = nil, nil, nil
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

// TestFaultAtEveryStep injects one failure into each step of a guarded
// write and checks that nothing is lost or torn, that no temporary file is
// left behind, that the caller gets an IO error naming the step, and that
// the ledger and the history tell the truth about what happened.
func TestFaultAtEveryStep(t *testing.T) {
	const newContent = "new line, longer than the old\n"
	for _, f := range faults() {
		t.Run(f.name, func(t *testing.T) {
			oldContent := "old line\n"
			switch {
			case f.huge:
				oldContent = strings.Repeat("old line\n", 16000)
			case f.large:
				oldContent = strings.Repeat("old line\n", 5000)
			case f.medium:
				oldContent = strings.Repeat("old line\n", 2500)
			}
			t.Cleanup(clearHooks)
			w, dir := testutil.NewWorkspace(t)
			if f.huge {
				testutil.NeedLeases(t, dir)
			}
			s := w.NewSession("fault")
			if !f.newFile {
				testutil.WriteFile(t, dir, "a.txt", oldContent)
				if _, err := s.Read(ctx, "a.txt", nil); err != nil {
					t.Fatal(err)
				}
			}
			before := testutil.LedgerRecords(t, w)
			fired := 0
			f.install(&fired)
			installFaults(w)
			res, err := s.Write(ctx, "a.txt", newContent, nil)
			clearHooks()
			installFaults(w)
			if fired == 0 {
				t.Fatalf("the fault was never injected")
			}

			var e *editguard.Error
			wantCode := codeFor(f.name)
			switch {
			case f.committed:
				// The new bytes are in place: the change is reported as
				// committed, and what failed afterwards as a warning.
				if err != nil || res == nil || res.SHA256 != testutil.SHA256Hex([]byte(newContent)) {
					t.Fatalf("Write() = %+v, %v; want the committed change's result", res, err)
				}
				if f.warning == "" && len(res.Warnings) > 0 {
					t.Errorf("Warnings = %q, want none", res.Warnings)
				}
				if f.warning != "" && !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, f.warning) }) {
					t.Errorf("Warnings = %q, want one saying %q", res.Warnings, f.warning)
				}
			case !errors.As(err, &e) || e.Code != wantCode:
				t.Fatalf("Write() error = %v, want an *editguard.Error with code %s", err, wantCode)
			case e.Details["step"] != f.step:
				t.Errorf("Details[step] = %v, want %q (error: %v)", e.Details["step"], f.step, err)
			}
			switch {
			case f.outcomeLost && f.committed:
			case f.outcomeLost:
				if _, ok := e.Details["ledger_error"]; !ok {
					t.Errorf("Details = %v, want ledger_error: the attempt is missing from the ledger", e.Details)
				}
			case !f.committed && res != nil:
				t.Errorf("Write() result = %+v, want nil for a change that was not made", res)
			}

			// The file is not left held: an open that would wait for a
			// lease fails at once with O_NONBLOCK.
			if fd, err := unix.Open(filepath.Join(dir, "a.txt"), unix.O_RDONLY|unix.O_NONBLOCK, 0); err == unix.EWOULDBLOCK {
				t.Errorf("a.txt is still held under a lease after the write returned")
			} else if err == nil {
				unix.Close(fd)
			}

			// Nothing lost, nothing torn.
			got, rerr := os.ReadFile(filepath.Join(dir, "a.txt"))
			switch {
			case f.committed:
				if string(got) != newContent {
					t.Errorf("target = %q, %v; want the new content %q", got, rerr, newContent)
				}
			case f.newFile:
				if !errors.Is(rerr, os.ErrNotExist) {
					t.Errorf("target = %q, %v; want no file", got, rerr)
				}
			default:
				if string(got) != oldContent {
					t.Errorf("target = %q, %v; want the old content %q", got, rerr, oldContent)
				}
			}
			names := dirNames(t, dir)
			tmp := testutil.TempName(w, "a.txt")
			if slices.Contains(names, tmp) != f.leaksTemp {
				t.Errorf("directory = %v; temporary file left: %v, want %v", names, !f.leaksTemp, f.leaksTemp)
			}
			if f.leaksTemp {
				// What the temporary name holds is the displaced old content.
				if b, _ := os.ReadFile(filepath.Join(dir, tmp)); string(b) != oldContent {
					t.Errorf("left temporary file = %q, want the displaced %q", b, oldContent)
				}
			}

			// The ledger tells the truth.
			after := testutil.LedgerRecords(t, w)
			if n, err := w.VerifyLedger(); err != nil || n < len(after) {
				t.Errorf("VerifyLedger() = %d, %v; want at least %d, nil", n, err, len(after))
			}
			if f.outcomeLost {
				// The intent is all the ledger holds, until the next Open
				// judges the outcome from the file.
				if len(after) != len(before)+1 {
					t.Fatalf("ledger has %d records, want %d: the intent", len(after), len(before)+1)
				}
				if r := after[len(after)-1]; r.Outcome != "pending" || r.SHA256After != testutil.SHA256Hex([]byte(newContent)) {
					t.Errorf("ledger record = {outcome %q, sha256_after %.8s}, want the write's intent", r.Outcome, r.SHA256After)
				}
				clearHooks()
				w2, err := editguard.Open(dir, nil)
				if err != nil {
					t.Fatal(err)
				}
				recs := testutil.LedgerRecords(t, w2)
				w2.Close()
				r := recs[len(recs)-1]
				switch {
				case len(recs) != len(before)+1 || r.Intent == 0:
					t.Errorf("after Open, the ledger has %d records, the last %+v; want %d, the intent's outcome", len(recs), r, len(before)+1)
				case f.committed && (r.Outcome != "ok" || r.SHA256After != testutil.SHA256Hex([]byte(newContent)) || r.HistoryVersion == ""):
					t.Errorf("outcome after Open = %+v, want ok with the new content and the displaced version", r)
				case !f.committed && (r.Outcome != "interrupted" || r.ErrorReason != "not_applied"):
					t.Errorf("outcome after Open = %+v, want interrupted, not_applied", r)
				}
			} else {
				if len(after) != len(before)+1 {
					t.Fatalf("ledger has %d records, want %d", len(after), len(before)+1)
				}
				r := after[len(after)-1]
				switch {
				case f.committed:
					if r.Outcome != "ok" || r.SHA256After != testutil.SHA256Hex([]byte(newContent)) || !strings.Contains(string(r.Result), f.warning) {
						t.Errorf("ledger record = {outcome %q, sha256_after %.8s, result %s}, want ok with the warning", r.Outcome, r.SHA256After, r.Result)
					}
				case r.Outcome != "error" || r.ErrorCode != string(wantCode) || r.Path != "a.txt":
					t.Errorf("ledger record = {outcome %q, error_code %q, path %q}, want {error, %s, a.txt}", r.Outcome, r.ErrorCode, r.Path, wantCode)
				case !strings.Contains(string(r.Result), `"step":"`+f.step+`"`):
					t.Errorf("ledger record result = %s, want it to name step %q", r.Result, f.step)
				case r.SHA256After != "":
					t.Errorf("ledger record sha256_after = %q for a failed commit", r.SHA256After)
				}
			}

			// The history names only restorable content, and whatever was
			// displaced is in it.
			sums := testutil.CheckHistoryRestorable(t, dir, "a.txt")
			if f.committed && !sums[testutil.SHA256Hex([]byte(oldContent))] {
				t.Errorf("the old content was displaced but is not in history")
			}

			// Recovery: the next guarded write succeeds and sweeps the temp.
			if !f.newFile || f.committed {
				if _, err := s.Read(ctx, "a.txt", nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.Write(ctx, "a.txt", "third\n", nil); err != nil {
				t.Fatalf("Write() after the fault error = %v", err)
			}
			if got := testutil.ReadFile(t, dir, "a.txt"); got != "third\n" {
				t.Errorf("target = %q, want %q", got, "third\n")
			}
			if names := dirNames(t, dir); !slices.Equal(names, []string{editguard.StateDir, "a.txt"}) {
				t.Errorf("directory after the next write = %v, want [%s a.txt]", names, editguard.StateDir)
			}
			if _, err := w.VerifyLedger(); err != nil {
				t.Errorf("VerifyLedger() after recovery error = %v", err)
			}
		})
	}
}
