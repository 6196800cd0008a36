//go:build unix

package gitsync

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Modes of tree entries.
const (
	ModeFile       = "100644"
	ModeExecutable = "100755"
	ModeSymlink    = "120000"
	ModeSubmodule  = "160000"
	ModeTree       = "040000"
)

// Entry is one entry of a tree, as git ls-tree -l lists it.
type Entry struct {
	Mode string // ModeFile, ModeExecutable, ModeSymlink, ModeSubmodule, ModeTree
	Type string // "blob", "tree" or "commit"
	OID  string
	Size int64 // the blob's size in the repository (before any checkout conversion); -1 for a tree or commit
}

// Regular reports whether e is a regular file (executable or not).
func (e Entry) Regular() bool { return e.Mode == ModeFile || e.Mode == ModeExecutable }

// Entries lists the entries of commit's tree at the given paths and at every
// directory above them, keyed by path (relative to the top, slash-separated).
// A path that commit does not have is absent from the map. It lists the
// subtrees holding the paths, so its cost grows with their size.
func (r *Repo) Entries(ctx context.Context, commit string, paths []string) (map[string]Entry, error) {
	out := map[string]Entry{}
	if commit == "" || len(paths) == 0 {
		return out, nil
	}
	tops := map[string]bool{}
	for _, p := range paths {
		top, _, _ := strings.Cut(p, "/")
		tops[top] = true
	}
	specs := make([]string, 0, len(tops))
	for t := range tops {
		specs = append(specs, t)
	}
	sort.Strings(specs)
	for len(specs) > 0 {
		n := min(len(specs), 500)
		args := append([]string{"ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit, "--"}, specs[:n]...)
		specs = specs[n:]
		data, err := r.run(ctx, nil, args...)
		if err != nil {
			return nil, err
		}
		for _, rec := range bytes.Split(data, []byte{0}) {
			if len(rec) == 0 {
				continue
			}
			// mode SP type SP object SP size (padded; "-" if not a blob) TAB name
			meta, name, ok := bytes.Cut(rec, []byte{'\t'})
			f := strings.Fields(string(meta))
			if !ok || len(f) != 4 {
				return nil, fmt.Errorf("git ls-tree: unexpected output %q", rec)
			}
			size := int64(-1)
			if f[3] != "-" {
				if size, err = strconv.ParseInt(f[3], 10, 64); err != nil || size < 0 {
					return nil, fmt.Errorf("git ls-tree: unexpected output %q", rec)
				}
			}
			out[string(name)] = Entry{Mode: f[0], Type: f[1], OID: f[2], Size: size}
		}
	}
	return out, nil
}

// Blob is a blob's content as a checkout would write it, or, if that is
// larger than the limit (see SetMaxBlobSize), the fact and a size.
type Blob struct {
	Data []byte
	// Size is len(Data), or for a blob TooLarge, the blob's size in the
	// repository; but if AtLeast is set, a lower bound of the converted
	// content's size (the limit plus one): the conversion was stopped.
	Size     int64
	TooLarge bool
	AtLeast  bool
}

// ReadBlobs returns the content of blobs as a checkout would write them to
// the working tree, keyed by path: end-of-line conversion and smudge
// filters of the path's attributes (in the working tree) applied. want maps
// each path (relative to the top) to its blob id.
//
// Sizes come first, from git cat-file --batch-check, which reads no
// content: a blob larger than the limit is not read at all (its Blob is
// TooLarge), so that a huge blob costs neither this process nor git any
// memory. The other blobs of paths without any conversion are read in one
// batch, each into a buffer of its size as git streams them; each of the
// others takes a git cat-file --filters of its own (git's batch mode
// misreports the size of converted content), read up to the limit: a
// conversion that makes the content larger than the limit is stopped and
// the Blob is TooLarge. The caller bounds what is held at once by what it
// asks for in one call.
func (r *Repo) ReadBlobs(ctx context.Context, want map[string]string) (map[string]Blob, error) {
	out := map[string]Blob{}
	if len(want) == 0 {
		return out, nil
	}
	paths := make([]string, 0, len(want))
	for p, oid := range want {
		if strings.ContainsAny(p, "\n\x00") {
			return nil, fmt.Errorf("gitsync: cannot name the path %q", p)
		}
		if !isOID(oid) {
			return nil, fmt.Errorf("gitsync: %s: bad object id %q", p, oid)
		}
		paths = append(paths, p)
	}
	sort.Strings(paths)
	sizes, err := r.blobSizes(ctx, paths, want)
	if err != nil {
		return nil, err
	}
	converted, err := r.converted(ctx, paths)
	if err != nil {
		return nil, err
	}
	var plain []string
	for _, p := range paths {
		switch {
		case r.maxBlob > 0 && sizes[p] > r.maxBlob:
			out[p] = Blob{Size: sizes[p], TooLarge: true}
		case converted[p]:
			b, err := r.readConverted(ctx, p, want[p])
			if err != nil {
				return nil, err
			}
			out[p] = b
		default:
			plain = append(plain, p)
		}
	}
	if len(plain) == 0 {
		return out, nil
	}
	var in bytes.Buffer
	for _, p := range plain {
		fmt.Fprintf(&in, "%s\n", want[p])
	}
	err = r.stream(ctx, in.Bytes(), func(stdout io.Reader) error {
		br := bufio.NewReaderSize(stdout, 64<<10)
		for _, p := range plain {
			size, err := batchHeader(br, p)
			if err != nil {
				return err
			}
			if size != sizes[p] {
				return fmt.Errorf("git cat-file: %s: %d bytes, where --batch-check said %d", p, size, sizes[p])
			}
			body := make([]byte, size)
			if _, err := io.ReadFull(br, body); err != nil {
				return fmt.Errorf("git cat-file: output ends early")
			}
			if nl, err := br.ReadByte(); err != nil || nl != '\n' {
				return fmt.Errorf("git cat-file: output ends early")
			}
			out[p] = Blob{Data: body, Size: size}
		}
		return nil
	}, "cat-file", "--batch")
	if err != nil {
		return nil, err
	}
	return out, nil
}

// blobSizes returns the size of each path's blob (want[path]), as stored,
// without reading any content.
func (r *Repo) blobSizes(ctx context.Context, paths []string, want map[string]string) (map[string]int64, error) {
	var in bytes.Buffer
	for _, p := range paths {
		fmt.Fprintf(&in, "%s\n", want[p])
	}
	data, err := r.run(ctx, in.Bytes(), "cat-file", "--batch-check")
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(bytes.NewReader(data))
	out := make(map[string]int64, len(paths))
	for _, p := range paths {
		if out[p], err = batchHeader(br, p); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// batchHeader reads the line git cat-file --batch or --batch-check prints
// for the blob of path p: "<oid> blob <size>", and returns the size.
func batchHeader(br *bufio.Reader, p string) (int64, error) {
	head, err := br.ReadString('\n')
	if err != nil {
		return 0, fmt.Errorf("git cat-file: output ends early")
	}
	f := strings.Fields(head)
	if len(f) != 3 || f[1] != "blob" {
		return 0, fmt.Errorf("git cat-file: %s: %s", p, strings.TrimSpace(head))
	}
	size, err := strconv.ParseInt(f[2], 10, 64)
	if err != nil || size < 0 {
		return 0, fmt.Errorf("git cat-file: unexpected output %q", head)
	}
	return size, nil
}

// readConverted reads the blob oid converted for the path p, as git
// cat-file --filters writes it, up to the limit: more is not read, git is
// stopped and the Blob is TooLarge.
func (r *Repo) readConverted(ctx context.Context, p, oid string) (Blob, error) {
	var b Blob
	err := r.stream(ctx, nil, func(stdout io.Reader) error {
		if r.maxBlob <= 0 {
			data, err := io.ReadAll(stdout)
			b = Blob{Data: data, Size: int64(len(data))}
			return err
		}
		data, err := io.ReadAll(io.LimitReader(stdout, r.maxBlob+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > r.maxBlob {
			b = Blob{Size: int64(len(data)), TooLarge: true, AtLeast: true}
			return errEnough
		}
		b = Blob{Data: data, Size: int64(len(data))}
		return nil
	}, "cat-file", "--filters", "--path="+p, oid)
	return b, err
}

// isOID reports whether s is a full object id (SHA-1 or SHA-256), lower
// case hex: what may be written on a line of git cat-file --batch's input.
func isOID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// conversionAttrs are the attributes that make a checkout write other bytes
// than the blob's.
var conversionAttrs = []string{"text", "eol", "crlf", "filter", "ident", "working-tree-encoding"}

// converted reports which paths a checkout would convert: all of them with
// core.autocrlf=true, else those with any of conversionAttrs set.
func (r *Repo) converted(ctx context.Context, paths []string) (map[string]bool, error) {
	out := map[string]bool{}
	v, err := r.run(ctx, nil, "config", "--type=bool", "--get", "core.autocrlf")
	if err == nil && strings.TrimSpace(string(v)) == "true" {
		for _, p := range paths {
			out[p] = true
		}
		return out, nil
	}
	var in bytes.Buffer
	for _, p := range paths {
		in.WriteString(p)
		in.WriteByte(0)
	}
	data, err := r.run(ctx, in.Bytes(), append([]string{"check-attr", "-z", "--stdin"}, conversionAttrs...)...)
	if err != nil {
		return nil, err
	}
	f := bytes.Split(data, []byte{0})
	for i := 0; i+2 < len(f); i += 3 {
		if string(f[i+2]) != "unspecified" {
			out[string(f[i])] = true
		}
	}
	return out, nil
}

// HashObject stores data as a blob for the path p (relative to the top) and
// returns its id. The clean filters and end-of-line conversion of p's
// attributes apply, as they would to "git add p".
func (r *Repo) HashObject(ctx context.Context, p string, data []byte) (string, error) {
	out, err := r.run(ctx, data, "hash-object", "-w", "--stdin", "--path="+p)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Change is one path of a new commit: its new blob and mode, or its removal.
type Change struct {
	Path   string // relative to the top
	OID    string // the blob, stored with HashObject; empty with Delete
	Mode   string // ModeFile or ModeExecutable
	Delete bool
}

// Ident names the author and committer of a commit.
type Ident struct {
	Name, Email string
	When        time.Time
}

// Commit builds a commit whose tree is parent's with exactly changes
// applied, and whose only parent is parent. It works in a temporary index
// file of its own: the working tree, the repository's index and its refs
// are not touched. The caller must have checked that no change turns a
// directory of parent's tree into a file or the other way round (see
// Entries): git would replace the other entries silently.
func (r *Repo) Commit(ctx context.Context, parent string, changes []Change, message string, id Ident) (string, error) {
	dir, err := os.MkdirTemp("", "editguard-index-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	env := []string{"GIT_INDEX_FILE=" + filepath.Join(dir, "index")}
	if _, err := r.runEnv(ctx, LocalTimeout, env, nil, "read-tree", parent); err != nil {
		return "", err
	}
	zero := strings.Repeat("0", len(parent))
	var in bytes.Buffer
	for _, c := range changes {
		if c.Path == "" || path.Clean(c.Path) != c.Path || strings.HasPrefix(c.Path, "../") {
			return "", fmt.Errorf("gitsync: bad path %q", c.Path)
		}
		if c.Delete {
			fmt.Fprintf(&in, "0 %s\t%s\x00", zero, c.Path)
		} else {
			fmt.Fprintf(&in, "%s %s\t%s\x00", c.Mode, c.OID, c.Path)
		}
	}
	if _, err := r.runEnv(ctx, LocalTimeout, env, in.Bytes(), "update-index", "-z", "--index-info"); err != nil {
		return "", err
	}
	tree, err := r.runEnv(ctx, LocalTimeout, env, nil, "write-tree")
	if err != nil {
		return "", err
	}
	date := strconv.FormatInt(id.When.Unix(), 10) + " " + id.When.Format("-0700")
	identEnv := []string{
		"GIT_AUTHOR_NAME=" + id.Name, "GIT_AUTHOR_EMAIL=" + id.Email, "GIT_AUTHOR_DATE=" + date,
		"GIT_COMMITTER_NAME=" + id.Name, "GIT_COMMITTER_EMAIL=" + id.Email, "GIT_COMMITTER_DATE=" + date,
	}
	out, err := r.runEnv(ctx, LocalTimeout, identEnv, []byte(message), "commit-tree", strings.TrimSpace(string(tree)), "-p", parent, "-F", "-")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// DiffPaths lists the paths (relative to the top) whose content or mode
// differs between the commits from and to; from "" stands for an empty
// tree. Renames are a removal and an addition.
func (r *Repo) DiffPaths(ctx context.Context, from, to string) ([]string, error) {
	if from == "" {
		out, err := r.run(ctx, []byte{}, "hash-object", "-t", "tree", "--stdin")
		if err != nil {
			return nil, err
		}
		from = strings.TrimSpace(string(out))
	}
	data, err := r.run(ctx, nil, "diff-tree", "-r", "-z", "--no-renames", "--name-only", "--no-commit-id", from, to)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range bytes.Split(data, []byte{0}) {
		if len(p) > 0 {
			out = append(out, string(p))
		}
	}
	return out, nil
}

// line runs a git command that prints one line, or exits 1 for "none",
// and returns the line, or "" for none.
func (r *Repo) line(ctx context.Context, args ...string) (string, error) {
	out, err := r.run(ctx, nil, args...)
	var ge *Error
	if errors.As(err, &ge) && ge.Exit == 1 {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// MergeBase returns the best common ancestor of two commits, or "" if they
// have none.
func (r *Repo) MergeBase(ctx context.Context, a, b string) (string, error) {
	return r.line(ctx, "merge-base", a, b)
}

// Head returns the commit HEAD names, or "" on an unborn branch.
func (r *Repo) Head(ctx context.Context) (string, error) {
	return r.line(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}")
}

// CurrentBranch returns the short name of the branch HEAD is on, or "" when
// HEAD is detached.
func (r *Repo) CurrentBranch(ctx context.Context) (string, error) {
	return r.line(ctx, "symbolic-ref", "-q", "--short", "HEAD")
}

// IsAncestor reports whether commit a is an ancestor of (or equal to) b.
func (r *Repo) IsAncestor(ctx context.Context, a, b string) (bool, error) {
	_, err := r.run(ctx, nil, "merge-base", "--is-ancestor", a, b)
	var ge *Error
	if errors.As(err, &ge) && ge.Exit == 1 {
		return false, nil
	}
	return err == nil, err
}

// HasCommit reports whether the repository has the commit oid.
func (r *Repo) HasCommit(ctx context.Context, oid string) bool {
	_, err := r.run(ctx, nil, "cat-file", "-e", oid+"^{commit}")
	return err == nil
}
