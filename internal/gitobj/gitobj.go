// Package gitobj reads the index, the blobs, HEAD and the trees of its
// commit of a git repository, read-only and without running git.
//
// It serves checkpoints of a working tree: a file whose bytes hash to the
// blob id that the index lists for its path need not be copied, since git
// already holds those bytes. The checkpoint records the id instead, and may
// read the blob back much later. HEAD's tree ([Repo.Head],
// [Repo.CommitTree], [Trees.Lookup]) tells a command's end which contents
// it displaced were committed work.
//
// # What is read
//
// Everything is read through an [os.Root] on the git directory, so that no
// symlink leads out of it, and nothing is ever written or executed:
//
//   - config, only for core.repositoryFormatVersion and
//     extensions.objectFormat;
//   - index, versions 2, 3 and 4, after its checksum is verified
//     ([Repo.ReadIndex]);
//   - HEAD, loose refs and packed-refs, and commit and tree objects (see
//     head.go); config's extensions.refStorage, for a reftable repository,
//     whose refs are [ErrUnsupported];
//   - loose objects, objects/xx/yyyy…;
//   - packs: objects/pack/*.idx (version 2) beside their .pack files, with
//     deltas of both kinds, against an offset in the same pack or against an
//     object id. The packs are listed once, when the repository is opened.
//
// # What is not supported, and why
//
//   - SHA-256 repositories, and repository format versions above 1: [Open]
//     reports [ErrUnsupported] rather than misread them.
//   - Split indexes (the "link" extension) and index extensions that git
//     requires a reader to understand: [ErrUnsupported], since the entries
//     in the file are then not the whole index.
//   - objects/info/alternates, and the commondir of a linked worktree: they
//     name directories outside the git directory, which is all this package
//     reads. Objects held only there are not found; Open fails on a linked
//     worktree's git directory, which has no objects of its own.
//   - Version 1 pack indexes (written by no git since 2008), which are
//     skipped with their packs, and multi-pack-index and commit-graph files,
//     which only speed git up: every pack still has its own .idx.
//   - Objects a partial clone left out are not found, as any other missing
//     object.
//
// # Bounds
//
// The repository is untrusted input. Every size and offset read from it is
// checked before it is used; malformed data is an error, never a panic, and
// [Repo.ReadBlob] never returns bytes that do not hash to the id asked for.
//
//   - config is read only up to 1 MiB, and the index up to the limit given
//     to ReadIndex; the paths of a version 4 index, once expanded, may take at
//     most 16 times the size of the file.
//   - ReadBlob returns at most its max bytes. A delta chain may be at most
//     10,000 deep; every object along it, base, delta or intermediate
//     result, may be at most max(4·max, 64 MiB) bytes, and all the bytes
//     inflated and produced along the chain at most 16 times that; beyond,
//     [ErrTooLarge]. A read holds at most three such buffers at once besides
//     its result.
//   - Compressed data is read no further than zlib could need for the size
//     the object declares, so that a stream which never ends costs no more
//     than one that does; and an object may declare at most 1032 times the
//     size of its compressed data (deflate's best), so that a small file
//     cannot have a large buffer allocated.
//   - Special files (FIFOs, devices) are never read: files are opened
//     without blocking, and closed unread unless they are regular.
//   - Pack indexes are mapped into memory (on systems without mmap, read
//     into it, up to 1 GiB each). If one is truncated while it is mapped,
//     the fault this causes makes [Repo.Has] report false and ReadBlob fail,
//     instead of crashing the program.
package gitobj

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	"github.com/editguard/editguard/internal/safeopen"
)

// ID is the SHA-1 id of a git object.
type ID [20]byte

// String returns the id as 40 lowercase hexadecimal digits.
func (id ID) String() string { return hex.EncodeToString(id[:]) }

// ParseID parses 40 hexadecimal digits into an id.
func ParseID(s string) (ID, bool) {
	var id ID
	if len(s) != 2*len(id) {
		return ID{}, false
	}
	if _, err := hex.Decode(id[:], []byte(s)); err != nil {
		return ID{}, false
	}
	return id, true
}

// BlobID returns the id git gives a blob of the given content: the SHA-1 of
// "blob <decimal length>\x00" followed by the content.
func BlobID(data []byte) ID { return objectID(objBlob, data) }

// objectID returns the id of an object of type typ and the given content.
func objectID(typ int, data []byte) ID {
	var hdr [32]byte
	b := append(append(hdr[:0], typeNames[typ]...), ' ')
	b = strconv.AppendInt(b, int64(len(data)), 10)
	b = append(b, 0)
	h := sha1.New()
	h.Write(b)
	h.Write(data)
	var id ID
	h.Sum(id[:0])
	return id
}

var (
	// ErrUnsupported reports a repository or index this package does not
	// read: SHA-256 objects, a repository format version above 1, a split
	// index, an unknown index version or required extension.
	ErrUnsupported = errors.New("gitobj: unsupported repository format")

	// ErrNotFound reports an object that is in no pack and not loose.
	ErrNotFound = errors.New("gitobj: object not found")

	// ErrTooLarge reports a file or object over the limit it is read with.
	ErrTooLarge = errors.New("gitobj: too large")
)

// corrupt returns the error for malformed data in the repository.
func corrupt(format string, args ...any) error {
	return fmt.Errorf("gitobj: corrupt "+format, args...)
}

// Repo is a git directory opened for reading.
//
// A Repo is safe for use by several goroutines at once, except for Close,
// which must come after every other call has returned.
type Repo struct {
	root    *os.Root // the git directory
	objects *os.Root // its objects directory
	packs   []*pack  // the packs found when the Repo was opened
	loose   [256]looseDir
	// refStorage is the config's extensions.refStorage ("" for none).
	refStorage string
}

const maxConfig = 1 << 20

// Open opens the git directory dir (the ".git" directory itself, not the
// work tree) for reading.
//
// Open does not take ownership of dir: the Repo opens a Root of its own on
// the same directory, so the caller may close dir at any time, and must
// close the Repo too.
//
// Open reads the config file, if there is one, and fails with
// [ErrUnsupported] if it names an object format other than sha1 or a
// repository format version above 1. It lists the packs once; packs
// written after Open are not seen by this Repo.
func Open(dir *os.Root) (*Repo, error) {
	root, err := dir.OpenRoot(".")
	if err != nil {
		return nil, fmt.Errorf("gitobj: %w", err)
	}
	r := &Repo{root: root}
	if err := r.open(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Repo) open() error {
	data, err := readFile(r.root, "config", maxConfig)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return fmt.Errorf("gitobj: reading config: %w", err)
	default:
		if err := checkConfig(data); err != nil {
			return err
		}
		vars, _ := parseConfig(data, "extensions.refstorage")
		r.refStorage = strings.ToLower(vars["extensions.refstorage"])
	}
	r.objects, err = r.root.OpenRoot("objects")
	if err != nil {
		if _, cerr := r.root.Lstat("commondir"); cerr == nil {
			return fmt.Errorf("gitobj: linked worktree, objects are in its commondir: %w", ErrUnsupported)
		}
		return fmt.Errorf("gitobj: %w", err)
	}
	r.packs = listPacks(r.objects)
	return nil
}

// Close releases the files and mappings the Repo holds. The Repo must not
// be used afterwards.
func (r *Repo) Close() error {
	var errs []error
	for _, p := range r.packs {
		errs = append(errs, p.close())
	}
	r.packs = nil
	if r.objects != nil {
		errs = append(errs, r.objects.Close())
	}
	errs = append(errs, r.root.Close())
	return errors.Join(errs...)
}

// Has reports whether the object id is in the repository: in the index of
// one of its packs, or as a loose object, a regular file objects/xx/yyyy….
//
// Has trusts the pack indexes and does not read the objects themselves: an
// object it reports may still fail to read if the repository is corrupt.
// Loose objects are listed one fan-out directory at a time, the first time
// Has looks into it, and the listing is kept: an object written later to a
// directory already listed is not seen (by Has; ReadBlob finds it). In a
// directory of more than 65,536 entries, Has looks for each file instead.
func (r *Repo) Has(id ID) (found bool) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fault(recover()) {
			found = false
		}
	}()
	for _, p := range r.packs {
		if _, ok := p.find(id); ok {
			return true
		}
	}
	return r.hasLoose(id)
}

// ReadBlob reads the blob id, appending its content to buf[:0]; buf may be
// nil.
//
// It fails with [ErrTooLarge] if the content is over max bytes (or if a
// delta chain leading to it is over the bounds in the package
// documentation), with [ErrNotFound] if the object is in no pack and not
// loose, and with another error if it is not a blob or is malformed. The
// content returned always hashes to id.
func (r *Repo) ReadBlob(id ID, buf []byte, max int64) (data []byte, err error) {
	return r.readObject(id, objBlob, buf, max)
}

// readObject reads the object id, which must be of type want, as ReadBlob
// reads a blob.
func (r *Repo) readObject(id ID, want int, buf []byte, max int64) (data []byte, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if fault(recover()) {
			data, err = nil, fmt.Errorf("gitobj: reading %s: memory fault in a mapped pack index", id)
		}
	}()
	max = clamp(max)
	var packErr error
	for _, p := range r.packs {
		i, ok := p.find(id)
		if !ok {
			continue
		}
		off, ok := p.offset(i)
		if ok {
			data, err = r.readPacked(p, off, want, buf, max)
		} else {
			err = corrupt("pack index %s: bad offset", p.name)
		}
		if err == nil {
			return verify(id, want, data)
		}
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		if packErr == nil {
			packErr = fmt.Errorf("gitobj: reading %s: %w", id, err)
		}
	}
	data, err = r.readLoose(id, want, buf, max)
	switch {
	case err == nil:
		return verify(id, want, data)
	case !errors.Is(err, ErrNotFound):
		return nil, err
	case packErr != nil:
		return nil, packErr
	}
	return nil, fmt.Errorf("%w: %s", ErrNotFound, id)
}

// verify checks that data is the object id, of type typ.
func verify(id ID, typ int, data []byte) ([]byte, error) {
	if objectID(typ, data) != id {
		return nil, corrupt("object %s: content does not hash to its id", id)
	}
	return data, nil
}

// clamp returns n, or 0 if n is negative, or the largest length of a slice
// if n is larger.
func clamp(n int64) int64 {
	const maxInt = int64(^uint(0) >> 1)
	return min(max(n, 0), maxInt)
}

// fault reports whether e, a value recovered from a panic, is a memory
// fault turned into a panic by debug.SetPanicOnFault: a pack index mapped
// into memory was truncated under us. It raises any other panic again.
func fault(e any) bool {
	if e == nil {
		return false
	}
	if _, ok := e.(interface{ Addr() uintptr }); ok {
		return true
	}
	panic(e)
}

// openFile opens name in root for reading, without blocking if it is a
// FIFO (safeopen), and fails unless it is a regular file. It returns the
// file's size.
func openFile(root *os.Root, name string) (*os.File, int64, error) {
	f, err := safeopen.OpenIn(root, name)
	if err != nil {
		return nil, 0, fmt.Errorf("gitobj: %w", err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// readFile reads the regular file name in root, failing with ErrTooLarge
// if it is over max bytes.
func readFile(root *os.Root, name string, max int64) ([]byte, error) {
	f, size, err := openFile(root, name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size > clamp(max) {
		return nil, fmt.Errorf("gitobj: %s has %d bytes: %w", name, size, ErrTooLarge)
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("gitobj: reading %s: %w", name, err)
	}
	return data, nil
}
