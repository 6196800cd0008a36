//go:build linux

package editguard_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/crashsim"
)

// TestTracedWriteChild is the process that strace watches: one guarded
// write over an existing file in the workspace named by tracedEnv. The
// markers written to stderr delimit the write in the trace.
func TestTracedWriteChild(t *testing.T) {
	dir := os.Getenv(tracedEnv)
	if dir == "" {
		t.Skip("run by the syscall-order test under strace")
	}
	tracedWriteOf(t, dir, tracedNew)
}

// TestSyscallOrder checks the commit protocol in the system calls a guarded
// write makes, as strace records them.
func TestSyscallOrder(t *testing.T) {
	tw := traceWrite(t)
	target := filepath.Join(tw.Root, "a.txt")
	calls := tw.Calls[tw.Begin:tw.End]
	find := func(what string, from int, match func(c crashsim.Syscall) bool) int {
		t.Helper()
		for i := from; i < len(calls); i++ {
			if calls[i].Ret >= 0 && match(calls[i]) {
				return i
			}
		}
		t.Fatalf("no %s in the trace after call %d:\n%s", what, from, dumpCalls(calls))
		return -1
	}
	str := func(c crashsim.Syscall, i int) string {
		if i < len(c.Args) {
			return string(c.Args[i].Str)
		}
		return ""
	}

	// The file's lock, a lock file in the state directory, is taken before
	// the target is read.
	fileLock := find("flock(LOCK_EX) of the file's lock", 0, func(c crashsim.Syscall) bool {
		return c.Name == "flock" && strings.Contains(c.Args[0].Path, "/.editguard/locks/file-") && strings.Contains(c.Args[1].Text, "LOCK_EX")
	})
	fileLockFD := calls[fileLock].Args[0].FD
	read := find("open of the target for reading", 0, func(c crashsim.Syscall) bool {
		return c.Name == "openat" && c.Path == target && strings.Contains(c.Args[2].Text, "O_RDONLY")
	})
	if read < fileLock {
		t.Errorf("target opened for reading (call %d) before the file's lock was taken (call %d)", read, fileLock)
	}
	// Never truncated in place.
	for i, c := range calls {
		if c.Name == "openat" && c.Path == target && strings.Contains(c.Args[2].Text, "O_TRUNC") {
			t.Errorf("call %d opens the target with O_TRUNC", i)
		}
	}
	// The temporary file: O_EXCL, through the directory's descriptor.
	isTemp := regexp.MustCompile(`^\.a\.txt\.[0-9a-f]{16}\.egtmp$`).MatchString
	create := find("creation of the temporary file", fileLock, func(c crashsim.Syscall) bool {
		return c.Name == "openat" && isTemp(str(c, 1)) && strings.Contains(c.Args[2].Text, "O_CREAT")
	})
	cc := calls[create]
	tempName := str(cc, 1)
	temp := filepath.Join(tw.Root, tempName)
	if !strings.Contains(cc.Args[2].Text, "O_EXCL") {
		t.Errorf("temporary file opened with %s, want O_EXCL", cc.Args[2].Text)
	}
	if cc.Args[0].FD == -100 || cc.Args[0].Path != tw.Root {
		t.Errorf("temporary file opened relative to %q (fd %d), want the target's directory descriptor", cc.Args[0].Path, cc.Args[0].FD)
	}
	dirFD, tempFD := cc.Args[0].FD, int(cc.Ret)
	// Its data is fsynced before the commit lock on the directory is
	// taken for the swap; the history index line for the old content is
	// written by then (not fsynced: the intent carries the old content).
	sync := find("fsync of the temporary file", create, func(c crashsim.Syscall) bool {
		return (c.Name == "fsync" || c.Name == "fdatasync") && c.Args[0].FD == tempFD && c.Args[0].Path == temp
	})
	histWrite := find("write of the history index line", fileLock, func(c crashsim.Syscall) bool {
		return c.Name == "write" && strings.Contains(c.Args[0].Path, "/history/index/")
	})
	lock := find("flock(LOCK_EX) of the target's directory", 0, func(c crashsim.Syscall) bool {
		return c.Name == "flock" && c.Args[0].Path == tw.Root && strings.Contains(c.Args[1].Text, "LOCK_EX")
	})
	lockFD := calls[lock].Args[0].FD
	if lock < sync || lock < histWrite {
		t.Errorf("commit lock taken (call %d) before the temporary file was fsynced (call %d) and the history index line written (call %d)", lock, sync, histWrite)
	}
	// So is the change's intent, written to the ledger under the file's
	// lock, with the old content in it: with it durable, the ledger
	// accounts for the change whatever the swap leaves, and the displaced
	// bytes survive a power cut that takes the history's line.
	intentWrite := find("write of the ledger intent", fileLock, func(c crashsim.Syscall) bool {
		return c.Name == "write" && strings.HasSuffix(c.Args[0].Path, "/ledger.jsonl") && strings.Contains(string(c.Args[1].Str), `"outcome":"pending"`)
	})
	if want := `"displaced":"` + base64.StdEncoding.EncodeToString([]byte(tracedOld)) + `"`; !strings.Contains(string(calls[intentWrite].Args[1].Str), want) {
		t.Errorf("the intent does not carry the old content: %s", calls[intentWrite].Args[1].Str)
	}
	intentSync := find("fsync of the ledger intent", intentWrite, func(c crashsim.Syscall) bool {
		return c.Name == "fsync" && strings.HasSuffix(c.Args[0].Path, "/ledger.jsonl")
	})
	if lock < intentSync {
		t.Errorf("commit lock taken (call %d) before the ledger intent was fsynced (call %d)", lock, intentSync)
	}
	// Under it, the name is checked to still hold the file observed (an
	// lstat, which is not traced), and the exchange made.
	exchange := find("renameat2(RENAME_EXCHANGE) of the temporary file and the target", create, func(c crashsim.Syscall) bool {
		return c.Name == "renameat2" && str(c, 1) == tempName && str(c, 3) == "a.txt" && strings.Contains(c.Args[4].Text, "RENAME_EXCHANGE")
	})
	if exchange < lock {
		t.Errorf("exchange (call %d) before the commit lock was taken (call %d)", exchange, lock)
	}
	if c := calls[exchange]; c.Args[0].FD != dirFD || c.Args[2].FD != dirFD {
		t.Errorf("exchange through descriptors %d and %d, want the directory's %d", c.Args[0].FD, c.Args[2].FD, dirFD)
	}
	// The commit lock is released once the exchange is made (and the
	// displaced file verified), before the directory fsync, by LOCK_UN or
	// by closing its descriptor.
	release := find("release of the directory lock", lock+1, func(c crashsim.Syscall) bool {
		return c.Args[0].FD == lockFD && c.Args[0].Path == tw.Root &&
			(c.Name == "close" || c.Name == "flock" && strings.Contains(c.Args[1].Text, "LOCK_UN"))
	})
	if release < exchange {
		t.Errorf("commit lock released (call %d) before the exchange (call %d)", release, exchange)
	}
	dirSync := find("fsync of the directory after the exchange", exchange, func(c crashsim.Syscall) bool {
		return c.Name == "fsync" && c.Args[0].Path == tw.Root
	})
	// The outcome record is written under the file's lock, after the
	// directory fsync (so it cannot reach the disk before the change it
	// records). Its fsync is not waited for: the intent is durable.
	ledgerWrite := find("write of the ledger record", dirSync, func(c crashsim.Syscall) bool {
		return c.Name == "write" && strings.HasSuffix(c.Args[0].Path, "/ledger.jsonl") && strings.Contains(string(c.Args[1].Str), `"outcome":"ok"`)
	})
	fileRelease := find("release of the file's lock", fileLock+1, func(c crashsim.Syscall) bool {
		return c.Args[0].FD == fileLockFD && (c.Name == "close" || c.Name == "flock" && strings.Contains(c.Args[1].Text, "LOCK_UN"))
	})
	if fileRelease < ledgerWrite {
		t.Errorf("file's lock released (call %d) before the ledger record was written (call %d)", fileRelease, ledgerWrite)
	}
}

func dumpCalls(calls []crashsim.Syscall) string {
	var b strings.Builder
	for i, c := range calls {
		fmt.Fprintf(&b, "%3d %s", i, c.Name)
		for _, a := range c.Args {
			if a.Path != "" {
				fmt.Fprintf(&b, " %d<%s>", a.FD, a.Path)
			} else if a.Str != nil && len(a.Str) < 80 {
				fmt.Fprintf(&b, " %q", a.Str)
			} else {
				fmt.Fprintf(&b, " %.60s", a.Text)
			}
		}
		fmt.Fprintf(&b, " = %d%s %s\n", c.Ret, c.Err, c.Path)
	}
	return b.String()
}
