package editguard

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/editguard/editguard/internal/engine"
	"golang.org/x/text/unicode/norm"
)

// Name policies (Options.Names): what a change does with a name it creates
// that is not portable to every file system (Windows', macOS' case- and
// normalization-insensitive ones).
const (
	// NamesWarn lets the change go through with a warning in its result.
	NamesWarn = "warn"
	// NamesRefuse refuses the change with INVALID_ARGUMENT.
	NamesRefuse = "refuse"
	// NamesOff checks nothing.
	NamesOff = "off"
)

// namesFile is where a workspace sets its name policy: one word, in the
// state directory, read at Open unless Options.Names is set.
const namesFile = "names"

// maxNameBytes is the longest path element most file systems accept.
const maxNameBytes = 255

// forbiddenNameChars may not appear in a Windows file name; a backslash is
// a separator there.
const forbiddenNameChars = `<>:"|?*\`

// namePolicy returns the policy of opt (Options.Names) or, if it is empty,
// of the state directory's names file, else NamesWarn.
func (w *Workspace) namePolicy(opt string) (string, error) {
	word := opt
	from := "Options.Names"
	if word == "" {
		data, err := readBounded(w.state, namesFile, nil, 256)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return NamesWarn, nil
		case err != nil:
			return "", stateError("read "+StateDir+"/"+namesFile, err)
		}
		word, from = strings.TrimSpace(string(data)), StateDir+"/"+namesFile
		if word == "" {
			return NamesWarn, nil
		}
	}
	switch word {
	case NamesWarn, NamesRefuse, NamesOff:
		return word, nil
	}
	return "", fmt.Errorf("editguard: %s: unknown name policy %q: want %s, %s or %s", from, word, NamesWarn, NamesRefuse, NamesOff)
}

// nameReasons says why the path element name is not portable; nil if it
// is, as far as it alone can tell (twins need its directory).
func nameReasons(name string) []string {
	var why []string
	if stem := reservedStem(name); stem != "" {
		why = append(why, fmt.Sprintf("%q is a reserved device name on Windows", stem))
	}
	if i := strings.IndexAny(name, forbiddenNameChars); i >= 0 {
		why = append(why, fmt.Sprintf("it contains %q, which Windows does not allow in a name", name[i]))
	}
	if strings.ContainsFunc(name, isControl) {
		why = append(why, "it contains a control character")
	}
	if strings.HasSuffix(name, ".") || strings.HasSuffix(name, " ") {
		why = append(why, "it ends in a dot or a space, which Windows drops")
	}
	if len(name) > maxNameBytes {
		why = append(why, fmt.Sprintf("it is %d bytes long; many file systems take at most %d", len(name), maxNameBytes))
	}
	return why
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

// reservedStem returns the part of name before its first dot if it is a
// Windows device name (CON, PRN, AUX, NUL, COM1-9, LPT1-9, in any case),
// else "".
func reservedStem(name string) string {
	stem, _, _ := strings.Cut(name, ".")
	stem = strings.TrimRight(stem, " ")
	switch u := strings.ToUpper(stem); {
	case u == "CON" || u == "PRN" || u == "AUX" || u == "NUL":
		return stem
	case len(u) == 4 && (u[:3] == "COM" || u[:3] == "LPT") && u[3] >= '1' && u[3] <= '9':
		return stem
	}
	return ""
}

// portableName returns a name like name that nameReasons accepts.
func portableName(name string) string {
	var b strings.Builder
	for _, r := range name {
		if isControl(r) || strings.ContainsRune(forbiddenNameChars, r) {
			r = '_'
		}
		b.WriteRune(r)
	}
	s := strings.TrimRight(b.String(), ". ")
	if len(s) > maxNameBytes {
		i := maxNameBytes
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s = strings.TrimRight(s[:i], ". ")
	}
	if s == "" {
		return "_"
	}
	if stem := reservedStem(s); stem != "" {
		s = stem + "_" + s[len(stem):]
	}
	return s
}

// twinKey is what makes two names the same on a file system that ignores
// case and Unicode normalization.
func twinKey(name string) string { return strings.ToLower(norm.NFC.String(name)) }

// findTwin returns a name in the directory dir (relative to the root) that
// differs from name only in case or normalization, if there is one, but
// none of the paths in gone (names the change removes: a move's source).
func (w *Workspace) findTwin(dir, name string, gone []string) (string, error) {
	f, err := w.root.OpenFile(dir, os.O_RDONLY|engine.ODirectory, 0) // a FIFO swapped in fails, not blocks
	if err != nil {
		return "", err
	}
	defer f.Close()
	key := twinKey(name)
	for {
		names, err := f.Readdirnames(256)
		for _, n := range names {
			if n != name && twinKey(n) == key && !slices.Contains(gone, path.Join(dir, n)) {
				return n, nil
			}
		}
		if err == io.EOF || len(names) == 0 {
			return "", nil
		}
		if err != nil {
			return "", err
		}
	}
}

// nameIssue is one new path element that is not portable.
type nameIssue struct {
	elem    string // the element
	at      string // the path up to and including it
	reasons []string
	twin    string // an existing sibling it differs from only in case or normalization
}

// newNameIssues returns the elements of resolved (relative to the root, no
// symlink in it) that a change creating it would create and that are not
// portable: the missing parents and the last element, if missing. Names
// that exist are never checked, nor are the paths in gone twins.
//
// A path it cannot look at (through a file, or a directory it may not
// read) has no name to judge: the change itself then fails with the
// error that says why (NOT_A_FILE, PERMISSION_DENIED), not this check.
func (w *Workspace) newNameIssues(resolved string, gone []string) []nameIssue {
	elems := splitPath(resolved)
	var issues []nameIssue
	parentNew := false
	for i, e := range elems {
		at := strings.Join(elems[:i+1], "/")
		if !parentNew {
			if _, err := w.root.Lstat(at); err == nil {
				continue
			} else if !errors.Is(err, fs.ErrNotExist) {
				return issues
			}
		}
		is := nameIssue{elem: e, at: at, reasons: nameReasons(e)}
		if !parentNew {
			twin, err := w.findTwin(path.Dir(at), e, gone)
			if err != nil {
				return issues
			}
			is.twin = twin
		}
		parentNew = true
		if len(is.reasons) > 0 || is.twin != "" {
			issues = append(issues, is)
		}
	}
	return issues
}

// why is the issue said in one clause.
func (is nameIssue) why() string {
	why := is.reasons
	if is.twin != "" {
		why = append(why[:len(why):len(why)], fmt.Sprintf("it differs only in case or Unicode normalization from %q beside it", is.twin))
	}
	return strings.Join(why, "; ")
}

// suggestion is a portable name in the issue's place.
func (is nameIssue) suggestion() string {
	if is.twin != "" && len(is.reasons) == 0 {
		return is.twin
	}
	return portableName(is.elem)
}

// checkNames applies the workspace's name policy to the names that
// creating resolved would add; p is the caller's path, for the error, and
// gone the paths the same change removes (a case-only rename is no twin).
// It returns the warnings of NamesWarn, or the INVALID_ARGUMENT of
// NamesRefuse.
func (w *Workspace) checkNames(p, resolved string, gone ...string) ([]string, error) {
	if w.opts.Names == NamesOff {
		return nil, nil
	}
	return w.nameVerdict(p, w.newNameIssues(resolved, gone))
}

// nameVerdict is the policy's answer to issues: the INVALID_ARGUMENT of
// NamesRefuse for the first, or a warning for each.
func (w *Workspace) nameVerdict(p string, issues []nameIssue) ([]string, error) {
	if len(issues) == 0 || w.opts.Names == NamesOff {
		return nil, nil
	}
	if w.opts.Names == NamesRefuse {
		is := issues[0]
		e := newError(CodeInvalidArgument, p, fmt.Sprintf("the name %q (%s) is not portable: %s", is.elem, shortPath(is.at), is.why()),
			fmt.Sprintf("use a portable name, such as %q; this workspace refuses names that are not portable", is.suggestion()), nil)
		e.Details["name"] = is.elem
		e.Details["suggestion"] = is.suggestion()
		return nil, e
	}
	var warnings []string
	for _, is := range issues {
		warnings = append(warnings, fmt.Sprintf("the name %q (%s) is not portable: %s; a portable name would be %q", is.elem, shortPath(is.at), is.why(), is.suggestion()))
	}
	return warnings, nil
}

// checkTwinsAmong applies the name policy to paths that one change creates
// together (a patch's new files), which may be twins of each other: two
// names in one directory that differ only in case or normalization.
func (w *Workspace) checkTwinsAmong(paths []string) ([]string, error) {
	if w.opts.Names == NamesOff {
		return nil, nil
	}
	seen := map[string]string{} // twinKey of a path: the path
	flagged := map[string]bool{}
	var issues []nameIssue
	for _, p := range paths {
		elems := splitPath(p)
		for i := range elems {
			at := strings.Join(elems[:i+1], "/")
			other, ok := seen[twinKey(at)]
			switch {
			case !ok:
				seen[twinKey(at)] = at
			case other != at && path.Dir(other) == path.Dir(at) && !flagged[at]:
				flagged[at] = true
				issues = append(issues, nameIssue{elem: elems[i], at: at, twin: path.Base(other)})
			}
		}
	}
	if len(issues) == 0 {
		return nil, nil
	}
	return w.nameVerdict(issues[0].at, issues)
}
