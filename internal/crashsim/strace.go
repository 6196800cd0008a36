// Package crashsim reconstructs the file-system states that a power failure
// may leave behind a recorded run of a program, in the manner of ALICE
// (Pillai et al., "All File Systems Are Not Created Equal", OSDI 2014).
//
// A run is recorded with strace (ParseStrace), translated into logical
// operations on files and directories (Replay), and CrashStates enumerates
// every state the disk may hold if power is cut after any operation: writes
// to a file after its last fsync may be lost or cut to a prefix, directory
// entries created, renamed or removed after the directory's last fsync may
// be lost, and lost operations need not be the latest ones, as long as each
// file's writes and each directory's entry changes persist in the order
// they were made. That is weaker than ext4 with data=ordered (which commits
// metadata in one ordered journal), so every state ext4 may produce is among
// those enumerated.
package crashsim

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

// Syscall is one completed system call from an strace log recorded with
// -f -y -xx (every string hex-escaped, every descriptor followed by its path).
type Syscall struct {
	PID  int
	Name string
	Args []Arg
	Ret  int64  // return value (-1 on error)
	Path string // for a returned descriptor, its path
	Err  string // errno name on error, like "ENOENT"
}

// Arg is one argument: Text as printed, with Str set for a quoted string
// and FD/Path for a descriptor annotated with its path.
type Arg struct {
	Text string
	Str  []byte
	FD   int    // -100 for AT_FDCWD
	Path string // the descriptor's path, "" if not a descriptor
}

var lineRE = regexp.MustCompile(`^(\d+) +(\w+)\((.*)\) += (-?\d+)(<[^>]*>)?(?: (E\w+))?`)

var closeRE = regexp.MustCompile(`^(\d+) +close\((.*)$`)

// ParseStrace reads an strace log. Calls split by another thread's call
// (<unfinished ...> and <... resumed>) are joined, in the place of their
// end, but for a close, which takes effect where it begins; signals,
// exits and lines it does not understand are skipped.
func ParseStrace(r io.Reader) ([]Syscall, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<28)
	unfinished := map[string]string{}
	var out []Syscall
	for sc.Scan() {
		line := sc.Text()
		if i := strings.Index(line, " <unfinished ...>"); i >= 0 {
			pid, _, _ := strings.Cut(line, " ")
			if m := closeRE.FindStringSubmatch(line[:i]); m != nil {
				// close gives its descriptor's number up as it begins:
				// another thread may open a file under that number, and
				// write to it, before the close's end is logged. Its
				// resumed line is skipped.
				n, _ := strconv.Atoi(m[1])
				out = append(out, Syscall{PID: n, Name: "close", Args: []Arg{parseArg(m[2])}})
				unfinished[pid] = ""
				continue
			}
			unfinished[pid] = line[:i]
			continue
		}
		if i := strings.Index(line, "<... "); i >= 0 {
			pid, _, _ := strings.Cut(line, " ")
			j := strings.Index(line, " resumed>")
			if j < 0 || unfinished[pid] == "" {
				continue
			}
			line = unfinished[pid] + line[j+len(" resumed>"):]
			delete(unfinished, pid)
		}
		m := lineRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		pid, _ := strconv.Atoi(m[1])
		ret, _ := strconv.ParseInt(m[4], 10, 64)
		c := Syscall{PID: pid, Name: m[2], Ret: ret, Err: m[6]}
		if m[5] != "" {
			c.Path = string(unescape(m[5][1 : len(m[5])-1]))
		}
		for _, a := range splitArgs(m[3]) {
			c.Args = append(c.Args, parseArg(a))
		}
		out = append(out, c)
	}
	return out, sc.Err()
}

// splitArgs splits at top-level commas. With -xx no string holds a comma or
// a quote, so only brackets need counting.
func splitArgs(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '[', '{', '(':
			depth++
		case ']', '}', ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, strings.TrimSpace(s[start:]))
	}
	return out
}

func parseArg(a string) Arg {
	arg := Arg{Text: a, FD: -1}
	switch {
	case strings.HasPrefix(a, `"`):
		arg.Str = unescape(strings.TrimSuffix(strings.TrimSuffix(a[1:], `...`), `"`))
	case strings.HasSuffix(a, ">") && strings.Contains(a, "<"):
		i := strings.Index(a, "<")
		arg.Path = string(unescape(a[i+1 : len(a)-1]))
		if a[:i] == "AT_FDCWD" {
			arg.FD = -100
		} else {
			arg.FD, _ = strconv.Atoi(a[:i])
		}
	}
	return arg
}

// unescape decodes strace's escapes (\xNN, \n, \t, \\, \").
func unescape(s string) []byte {
	b := make([]byte, 0, len(s)/4)
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 >= len(s) {
			b = append(b, s[i])
			continue
		}
		i++
		switch s[i] {
		case 'x':
			if i+3 <= len(s) {
				v, err := strconv.ParseUint(s[i+1:i+3], 16, 8)
				if err == nil {
					b = append(b, byte(v))
					i += 2
					continue
				}
			}
			b = append(b, 'x')
		case 'n':
			b = append(b, '\n')
		case 't':
			b = append(b, '\t')
		case 'r':
			b = append(b, '\r')
		case 'v':
			b = append(b, '\v')
		case 'f':
			b = append(b, '\f')
		default:
			b = append(b, s[i])
		}
	}
	return b
}

func (c Syscall) String() string {
	return fmt.Sprintf("%s(%d args) = %d%s", c.Name, len(c.Args), c.Ret, c.Err)
}
