package hookwire

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"unicode/utf8"
)

// ActiveCommands is where, under a workspace's root, the records of the
// shell commands in progress are (one file each, while the command runs:
// the root package's checkpoint store keeps them there).
var ActiveCommands = filepath.Join(".editguard", "checkpoints", "active")

// NothingToEnd reports whether event is one after a batch of tool calls
// (Claude Code's PostToolBatch) in a workspace at root with no shell
// command in progress: the event then asks nothing of editguard (the hook
// ends only commands in progress there), and a hook may answer it without
// a server or a process of editguard's. Anything it cannot tell is false.
func NothingToEnd(root string, event []byte) bool {
	name, ok := TopLevelString(event, "hook_event_name")
	if !ok || name != "PostToolBatch" {
		return false
	}
	fd, err := syscall.Open(filepath.Join(root, ActiveCommands), syscall.O_RDONLY|syscall.O_DIRECTORY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errors.Is(err, syscall.ENOENT) {
		// No command was ever begun here, or no state at all.
		_, err := os.Lstat(root)
		return err == nil
	}
	if err != nil {
		return false
	}
	dir := os.NewFile(uintptr(fd), ActiveCommands)
	defer dir.Close()
	names, err := dir.Readdirnames(1)
	return len(names) == 0 && err == io.EOF
}

// TopLevelString returns the value of key in the JSON object data, if it
// is a string of valid UTF-8 without escapes (an event's name is); only the object's own
// keys are looked at, never one inside a value. The scan stops at key,
// so a large value after it is not read. Anything else (not an object,
// malformed, an escaped value or key) is false.
func TopLevelString(data []byte, key string) (string, bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return "", false
	}
	i++
	for {
		i = skipSpace(data, i)
		if i < len(data) && data[i] == '}' {
			return "", false
		}
		start := i + 1
		end, ok := skipString(data, i)
		if !ok {
			return "", false
		}
		k := data[start : end-1]
		i = skipSpace(data, end)
		if i >= len(data) || data[i] != ':' {
			return "", false
		}
		i = skipSpace(data, i+1)
		if string(k) == key {
			vend, ok := skipString(data, i)
			if !ok {
				return "", false
			}
			v := data[i+1 : vend-1]
			for _, c := range v {
				if c == '\\' || c < 0x20 {
					return "", false
				}
			}
			if !utf8.Valid(v) {
				return "", false
			}
			return string(v), true
		}
		if i, ok = skipValue(data, i); !ok {
			return "", false
		}
		i = skipSpace(data, i)
		if i >= len(data) {
			return "", false
		}
		switch data[i] {
		case ',':
			i++
		case '}':
			return "", false
		default:
			return "", false
		}
	}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the index after the JSON string starting at i.
func skipString(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return 0, false
	}
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1, true
		}
	}
	return 0, false
}

// skipValue returns the index after the JSON value starting at i: a
// string, an object or array (strings inside skipped as strings), or a
// number or literal.
func skipValue(data []byte, i int) (int, bool) {
	if i >= len(data) {
		return 0, false
	}
	switch data[i] {
	case '"':
		return skipString(data, i)
	case '{', '[':
		depth := 0
		for i < len(data) {
			switch data[i] {
			case '"':
				end, ok := skipString(data, i)
				if !ok {
					return 0, false
				}
				i = end
				continue
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return i + 1, true
				}
			}
			i++
		}
		return 0, false
	}
	start := i
	for i < len(data) {
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			return i, i > start
		}
		i++
	}
	return 0, false
}
