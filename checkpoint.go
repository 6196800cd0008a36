//go:build unix

package editguard

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"slices"
	"strings"

	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/statedir"
)

// The checkpoint store, .editguard/checkpoints:
//
//	objects/<sha256>   a content, stored once, named by its SHA-256
//	manifests/<name>   a checkpoint: every covered file's stat and content
//	last               the name of the last checkpoint's manifest, the stat
//	                   cache of the next scan
//	active/<id>.json   a command in progress: its session, tool and text,
//	                   and the name of its first checkpoint's manifest
//	lock               held by a scan and what follows it
//
// A manifest is written once and never changed; it is removed when neither
// last nor an active record names it. An object is removed when no
// manifest that may still be needed names it (see collect).

// checkpoints is the open checkpoint store.
type checkpoints struct {
	dir, objects, manifests, active *statedir.Dir
}

func (w *Workspace) openCheckpoints() (*checkpoints, error) {
	d, err := w.state.Sub(checkpointDir, true)
	if err != nil {
		return nil, err
	}
	cp := &checkpoints{dir: d}
	if cp.objects, err = d.Sub("objects", true); err == nil {
		if cp.manifests, err = d.Sub("manifests", true); err == nil {
			cp.active, err = d.Sub("active", true)
		}
	}
	if err != nil {
		cp.close()
		return nil, err
	}
	return cp, nil
}

func (cp *checkpoints) close() {
	for _, d := range []*statedir.Dir{cp.active, cp.manifests, cp.objects, cp.dir} {
		if d != nil {
			d.Close()
		}
	}
}

// lockCheckpoints opens the checkpoint store and takes its lock; unlock
// releases both.
func (w *Workspace) lockCheckpoints(ctx context.Context) (cp *checkpoints, unlock func(), err error) {
	if cp, err = w.openCheckpoints(); err != nil {
		return nil, nil, stateError("open checkpoints", err)
	}
	lk, err := cp.lock(ctx, w)
	if err != nil {
		cp.close()
		return nil, nil, ioError("", err)
	}
	return cp, func() { lk.Unlock(); cp.close() }, nil
}

func (cp *checkpoints) lock(ctx context.Context, w *Workspace) (*filelock.Lock, error) {
	return cp.dir.Lock(ctx, "lock", &filelock.Options{Timeout: w.opts.LockTimeout})
}

// lastFile names the last checkpoint's manifest.
const lastFile = "last"

// loadCache returns the last checkpoint, nil if there is none or it does
// not read back. It is only a stat cache: a lost or stale one makes the
// next scan read more files, never fewer.
func (cp *checkpoints) loadCache() *cpManifest {
	data, err := readBounded(cp.dir, lastFile, nil, 128)
	if err != nil {
		return nil
	}
	m, err := cp.loadManifest(strings.TrimSpace(string(data)))
	if err != nil {
		return nil
	}
	return m
}

// saveManifest writes m as a new manifest and returns its name. Like the
// active record naming it, it is written without an fsync: a command whose
// checkpoint a power cut took was never told to run.
func (cp *checkpoints) saveManifest(m *cpManifest) (string, error) {
	name := fmt.Sprintf("%x-%s", m.StartNS, strings.ToLower(rand.Text()[:8]))
	if err := cp.manifests.WriteFileVolatile(name, m.marshal(), 0o600); err != nil {
		return "", err
	}
	return name, nil
}

// setLast makes the manifest name the stat cache of the next scan.
func (cp *checkpoints) setLast(name string) {
	cp.dir.WriteFileVolatile(lastFile, []byte(name+"\n"), 0o600)
}

func (cp *checkpoints) loadManifest(name string) (*cpManifest, error) {
	if !validCommandID(name) {
		return nil, fmt.Errorf("bad manifest name %q", cutText(name, 80))
	}
	data, err := readBounded(cp.manifests, name, nil, maxStateFile)
	if err != nil {
		return nil, err
	}
	return unmarshalManifest(data)
}

// sweepManifests removes the manifests neither last nor an active record
// names. The caller holds the lock.
func (cp *checkpoints) sweepManifests() {
	keep := map[string]bool{}
	if data, err := readBounded(cp.dir, lastFile, nil, 128); err == nil {
		keep[strings.TrimSpace(string(data))] = true
	}
	acts, err := cp.activeRecords()
	if err != nil {
		return
	}
	for _, a := range acts {
		keep[a.Manifest] = true
	}
	ents, err := cp.manifests.ReadDir()
	if err != nil {
		return
	}
	for _, e := range ents {
		if !keep[e.Name()] && validCommandID(e.Name()) {
			cp.manifests.Remove(e.Name())
		}
	}
}

// readActive reads the active record of command id and its first
// checkpoint.
func (cp *checkpoints) readActive(id string) (*activeCommand, error) {
	act, err := cp.readActiveHead(id + ".json")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, newError(CodeNotFound, "", fmt.Sprintf("no command %s is in progress", id), "", nil)
	}
	if err != nil {
		return nil, stateError("read checkpoint", err)
	}
	if act == nil || act.ID != id {
		return nil, newError(CodeUnsafeState, "", fmt.Sprintf("%s/%s/active/%s.json does not parse", StateDir, checkpointDir, id), "remove it", nil)
	}
	if act.Before == nil {
		if act.Before, err = cp.loadManifest(act.Manifest); err != nil {
			return nil, newError(CodeUnsafeState, "", fmt.Sprintf("the first checkpoint of command %s does not read back", id), "remove "+StateDir+"/"+checkpointDir+"/active/"+id+".json", err)
		}
	}
	return act, nil
}

// readActiveHead reads the active record file name without its manifest;
// nil if it does not parse.
func (cp *checkpoints) readActiveHead(name string) (*activeCommand, error) {
	data, err := readBounded(cp.active, name, nil, maxStateFile)
	if err != nil {
		return nil, err
	}
	var act activeCommand
	if json.Unmarshal(data, &act) != nil {
		return nil, nil
	}
	if act.Legacy != nil { // written by an earlier version, with its checkpoint
		act.Before, act.Legacy, act.StartNS = act.Legacy, nil, act.Legacy.StartNS
	} else if act.Manifest == "" {
		return nil, nil
	}
	if act.Scanned.Seq == 0 {
		act.Scanned = act.Ledger
	}
	return &act, nil
}

// activeRecords reads the active records without their manifests, oldest
// first; those that do not parse are left out.
func (cp *checkpoints) activeRecords() ([]*activeCommand, error) {
	ents, err := cp.active.ReadDir()
	if err != nil {
		return nil, err
	}
	var out []*activeCommand
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), ".json")
		if !ok || !validCommandID(name) {
			continue
		}
		if act, err := cp.readActiveHead(e.Name()); err == nil && act != nil && act.ID == name {
			out = append(out, act)
		}
	}
	slices.SortFunc(out, func(a, b *activeCommand) int { return cmpInt64(a.StartNS, b.StartNS) })
	return out, nil
}

func cmpInt64(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// collect removes the stored contents that neither keep (the checkpoint
// just taken) nor an active command's first checkpoint names. With
// candidates, only those are considered (the contents a command's changes
// displaced); with none, the whole store is listed. The caller holds the
// checkpoint lock.
func (cp *checkpoints) collect(keep *cpManifest, candidates []string, all bool) {
	if !all && len(candidates) == 0 {
		return
	}
	live := map[string]bool{}
	for _, e := range keep.Files {
		if !e.Backed {
			live[e.SHA256] = true
		}
	}
	acts, err := cp.activeRecords()
	if err != nil {
		return
	}
	for _, a := range acts {
		m := a.Before
		if m == nil {
			if m, err = cp.loadManifest(a.Manifest); err != nil {
				return // unreadable: keep everything
			}
		}
		for _, f := range m.Files {
			live[f.SHA256] = true
		}
	}
	if !all {
		for _, sum := range candidates {
			if !live[sum] && validSHA256(sum) {
				cp.objects.Remove(sum)
			}
		}
		return
	}
	objs, err := cp.objects.ReadDir()
	if err != nil {
		return
	}
	for _, o := range objs {
		if !live[o.Name()] && validSHA256(o.Name()) {
			cp.objects.Remove(o.Name())
		}
	}
}

// The manifest file: a header, the files in path order, the unchecked
// paths, and a CRC-32C of all that. Integers are little-endian.
//
//	"egckpt1\n"
//	start_ns int64, files uint32, unchecked uint32
//	exclude: length uint8, hex; index: length uint8, hex
//	per file: path length uint16, path, size int64, mtime_ns int64,
//	  ctime_ns int64, ino uint64, mode uint32, flags uint8
//	  (1: backed, 2: git follows), sha256 hex (64), git hex (40)
//	per unchecked path: length uint16, path
//	crc32c uint32
//
// Hexadecimal sums and paths are kept as they are in memory: decoding
// makes one string of the file and slices it.
const manifestMagic = "egckpt1\n"

const (
	entryBacked = 1 << iota
	entryGit
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (m *cpManifest) marshal() []byte {
	n := len(manifestMagic) + 18 + len(m.Exclude) + len(m.Index) + 4
	for p := range m.Files {
		n += 2 + len(p) + 37 + 64 + 40
	}
	for _, p := range m.Unchecked {
		n += 2 + len(p)
	}
	b := make([]byte, 0, n)
	b = append(b, manifestMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.StartNS))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Files)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Unchecked)))
	b = append(append(b, byte(len(m.Exclude))), m.Exclude...)
	b = append(append(b, byte(len(m.Index))), m.Index...)
	for _, p := range slices.Sorted(mapKeys(m.Files)) {
		e := m.Files[p]
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
		b = binary.LittleEndian.AppendUint64(b, uint64(e.Size))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.MtimeNS))
		b = binary.LittleEndian.AppendUint64(b, uint64(e.CtimeNS))
		b = binary.LittleEndian.AppendUint64(b, e.Ino)
		b = binary.LittleEndian.AppendUint32(b, e.Mode)
		var flags byte
		if e.Backed {
			flags |= entryBacked
		}
		if e.Git != "" {
			flags |= entryGit
		}
		b = append(b, flags)
		b = append(b, e.SHA256...)
		if e.Git != "" {
			b = append(b, e.Git...)
		}
	}
	for _, p := range m.Unchecked {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
		b = append(b, p...)
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

var errManifest = errors.New("checkpoint manifest does not parse")

// unmarshalManifest decodes a manifest, checking every length against the
// data, every sum's form and every path's (relative, clean, no . or ..).
func unmarshalManifest(data []byte) (*cpManifest, error) {
	if len(data) < len(manifestMagic)+4 || string(data[:len(manifestMagic)]) != manifestMagic {
		return nil, errManifest
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errManifest)
	}
	s := string(body) // one copy; every string below is a slice of it
	d := &decoder{b: body, s: s, off: len(manifestMagic)}
	m := &cpManifest{StartNS: int64(d.u64())}
	nf, nu := int(d.u32()), int(d.u32())
	m.Exclude = d.str(int(d.u8()))
	m.Index = d.str(int(d.u8()))
	if d.bad || nf > len(s)/100 || nu > len(s)/2 {
		return nil, errManifest
	}
	m.Files = make(map[string]cpEntry, nf)
	prev := ""
	for range nf {
		p := d.str(int(d.u16()))
		e := cpEntry{Size: int64(d.u64()), MtimeNS: int64(d.u64()), CtimeNS: int64(d.u64()), Ino: d.u64(), Mode: d.u32()}
		flags := d.u8()
		e.Backed = flags&entryBacked != 0
		e.SHA256 = d.str(64)
		if flags&entryGit != 0 {
			e.Git = d.str(40)
		}
		if d.bad || p <= prev || !manifestPath(p) || !validSHA256(e.SHA256) || !lowerHex(e.Git) || e.Backed && e.Git == "" {
			return nil, errManifest
		}
		m.Files[p], prev = e, p
	}
	prev = ""
	for range nu {
		p := d.str(int(d.u16()))
		if d.bad || p <= prev || !manifestPath(p) {
			return nil, errManifest
		}
		m.Unchecked, prev = append(m.Unchecked, p), p
	}
	if d.bad || d.off != len(body) {
		return nil, errManifest
	}
	return m, nil
}

// decoder reads a manifest's fields from b, and strings as slices of s,
// the same bytes; bad is set once one runs past the end.
type decoder struct {
	b   []byte
	s   string
	off int
	bad bool
}

// next returns the offset of the next n bytes, -1 past the end.
func (d *decoder) next(n int) int {
	if d.bad || n < 0 || n > len(d.b)-d.off {
		d.bad = true
		return -1
	}
	d.off += n
	return d.off - n
}

func (d *decoder) str(n int) string {
	if i := d.next(n); i >= 0 {
		return d.s[i : i+n]
	}
	return ""
}

func (d *decoder) u8() uint8 {
	if i := d.next(1); i >= 0 {
		return d.b[i]
	}
	return 0
}

func (d *decoder) u16() uint16 {
	if i := d.next(2); i >= 0 {
		return binary.LittleEndian.Uint16(d.b[i:])
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if i := d.next(4); i >= 0 {
		return binary.LittleEndian.Uint32(d.b[i:])
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if i := d.next(8); i >= 0 {
		return binary.LittleEndian.Uint64(d.b[i:])
	}
	return 0
}

// manifestPath reports whether p is a path a walk yields: relative,
// slash-separated, without empty, . or .. elements, NUL, or excess length.
func manifestPath(p string) bool {
	if p == "" || len(p) > maxPathLen || p[0] == '/' || p[len(p)-1] == '/' || strings.IndexByte(p, 0) >= 0 {
		return false
	}
	for e := range strings.SplitSeq(p, "/") {
		if e == "" || e == "." || e == ".." {
			return false
		}
	}
	return true
}
