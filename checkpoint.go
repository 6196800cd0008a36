//go:build unix

package editguard

import (
	"cmp"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/editguard/editguard/internal/engine"
	"github.com/editguard/editguard/internal/filelock"
	"github.com/editguard/editguard/internal/gitobj"
	"github.com/editguard/editguard/internal/statedir"
	"golang.org/x/sys/unix"
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
	gv                              *gitView // opened by the first scan
	w                               *Workspace
	// mac is the workspace's MAC for purpose over data (Workspace.mac):
	// an active record is acted on only if its seal verifies.
	mac func(purpose string, data ...[]byte) string
	// deferFlush says a scan leaves the flush of what it stored to its
	// caller, in pending (see Command.End).
	deferFlush bool
	pending    func() error
}

func (w *Workspace) openCheckpoints() (*checkpoints, error) {
	d, err := w.state.Sub(checkpointDir, true)
	if err != nil {
		return nil, err
	}
	cp := &checkpoints{dir: d, mac: w.mac, w: w}
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
	cp.gv.close()
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
func (cp *checkpoints) loadCache() (*cpManifest, string) {
	data, err := readBounded(cp.dir, lastFile, nil, 128)
	if err != nil {
		return nil, ""
	}
	name := strings.TrimSpace(string(data))
	m, err := cp.loadManifest(name, "")
	if err != nil {
		return nil, ""
	}
	return m, name
}

// saveManifest writes m under a new name and returns the name and the
// SHA-256 of what it wrote, which an active record naming it seals. Like
// the active record naming it, it is written without an fsync: a command
// whose checkpoint a power cut took was never told to run.
//
// A manifest whose base (manifest.go) a full manifest on disk holds is
// written as a delta on that one: what it changed of the base. Any other
// is written in full, and becomes the full manifest of its base if it is
// flat.
func (cp *checkpoints) saveManifest(m *cpManifest) (name, sum string, err error) {
	name = fmt.Sprintf("%x-%s", m.StartNS, strings.ToLower(rand.Text()[:8]))
	var baseName, baseSum string
	if m.base != nil {
		baseName, baseSum = m.base.written()
		if baseName != "" && cp.manifestID(baseName) == ([4]int64{}) {
			baseName = "" // swept meanwhile: write it in full
		}
	}
	if baseName != "" {
		data := m.marshalDelta(baseName, baseSum)
		cp.w.setBase(name, baseName)
		if err := cp.manifests.WriteFileVolatile(name, data, 0o600); err != nil {
			return "", "", err
		}
		h := sha256.Sum256(data)
		sum = hex.EncodeToString(h[:])
	} else {
		cp.w.setBase(name, "")
		if sum, err = cp.writeFull(name, m); err != nil {
			return "", "", err
		}
	}
	if baseName == "" && m.base != nil && m.flat() {
		m.base.setWritten(name, sum)
		cp.w.keepBase(m.base)
	}
	return name, sum, nil
}

// setLast makes the manifest name the stat cache of the next scan, and
// records the mark taken before its scan (see journal.go).
func (cp *checkpoints) setLast(name string) {
	cp.dir.WriteFileVolatile(lastFile, []byte(name+"\n"), 0o600)
	m, _ := cp.w.markOf(name)
	cp.saveWatchMark(name, m)
}

// loadManifest reads the manifest name, which must hash to sum (an
// active record's ManifestSum), unless sum is "" (the stat cache, which
// is checked against the files themselves).
func (cp *checkpoints) loadManifest(name, sum string) (*cpManifest, error) {
	if !validCommandID(name) {
		return nil, fmt.Errorf("bad manifest name %q", cutText(name, 80))
	}
	if m := cp.cachedManifest(name, sum); m != nil {
		return m, nil
	}
	// Down the chain of deltas to a full manifest (or one in memory),
	// each checked against the sum the one above names.
	var chain []*cpDelta
	var root *cpManifest
	cur, curSum := name, sum
	for {
		if len(chain) > 0 {
			if m := cp.cachedManifest(cur, curSum); m != nil {
				root = m
				break
			}
			// A base this process holds: another process's delta on it
			// (an exec's) costs the delta, not the tree.
			if b := cp.w.keptBase(cur, curSum); b != nil {
				root = &cpManifest{base: b, n: b.len()}
				break
			}
		}
		if len(chain) > maxChain {
			return nil, fmt.Errorf("manifest %s: a chain of more than %d deltas", name, maxChain)
		}
		data, err := readBounded(cp.manifests, cur, nil, maxStateFile)
		if err != nil {
			return nil, err
		}
		// The file's SHA-256 is taken while a full manifest decodes
		// (a tree's worth of entries), and checked before it is used.
		sha := make(chan string, 1)
		go func() {
			h := sha256.Sum256(data)
			sha <- hex.EncodeToString(h[:])
		}()
		check := func() (string, error) {
			got := <-sha
			if curSum != "" && got != curSum {
				if cur == name {
					return "", fmt.Errorf("manifest %s is not the one its active record sealed", name)
				}
				return "", fmt.Errorf("manifest %s is not the base manifest %s names", cur, name)
			}
			if len(chain) == 0 {
				sum = got
			}
			return got, nil
		}
		if strings.HasPrefix(string(data[:min(len(data), len(deltaMagic))]), deltaMagic) {
			if _, err := check(); err != nil {
				return nil, err
			}
			d, err := unmarshalDelta(data)
			if err != nil {
				return nil, err
			}
			cp.w.setBase(cur, d.base)
			chain = append(chain, d)
			cur, curSum = d.base, d.baseSum
			continue
		}
		root, err = unmarshalManifest(data)
		got, serr := check()
		if serr != nil {
			return nil, serr
		}
		if err != nil {
			return nil, err
		}
		root.base.setWritten(cur, got)
		cp.w.keepBase(root.base)
		if len(chain) > 0 {
			cp.cacheManifest(cur, got, root)
		}
		break
	}
	if len(chain) == 0 {
		cp.cacheManifest(name, sum, root)
		return root, nil
	}
	// The deltas applied from the bottom, over the root's files.
	top := chain[0]
	m := &cpManifest{StartNS: top.start, Unchecked: top.unchecked, Exclude: top.exclude, Index: top.index}
	m.deriveFiles(root)
	for i := len(chain) - 1; i >= 0; i-- {
		for _, p := range chain[i].removed {
			m.delFile(p)
		}
		for j, p := range chain[i].paths {
			m.setFile(p, chain[i].entries[j])
		}
	}
	m.seal()
	cp.cacheManifest(name, sum, m)
	return m, nil
}

// sweepManifests removes the manifests neither last nor an active record
// names, and what a writeFull that did not finish (a crash) left: its
// temporary file, once a minute old (another process may be about to
// rename a fresh one). The caller holds the lock.
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
	// And the bases of those kept, down their chains.
	for name := range maps.Clone(keep) {
		for range maxChain + 1 {
			base := cp.baseOf(name)
			if base == "" || keep[base] {
				break
			}
			keep[base], name = true, base
		}
	}
	ents, err := cp.manifests.ReadDir()
	if err != nil {
		return
	}
	for _, e := range ents {
		switch {
		case !keep[e.Name()] && validCommandID(e.Name()):
			cp.manifests.Remove(e.Name())
		case strings.HasPrefix(e.Name(), ".tmp-"):
			if info, err := e.Info(); err == nil && info.Mode().IsRegular() && time.Since(info.ModTime()) > time.Minute {
				cp.manifests.Remove(e.Name())
			}
		}
	}
}

// baseOf returns the base of the manifest name, "" if it is a full one
// (or does not read): from memory, else from the delta's head.
func (cp *checkpoints) baseOf(name string) string {
	if base, ok := cp.w.baseOf(name); ok {
		return base
	}
	if !validCommandID(name) {
		return ""
	}
	f, err := cp.manifests.Open(name, os.O_RDONLY, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, 512)
	n, _ := f.ReadAt(head, 0)
	d := &decoder{b: head[:n], s: string(head[:n])}
	if d.str(len(deltaMagic)) != deltaMagic {
		cp.w.setBase(name, "")
		return ""
	}
	d.next(8 + 12)
	d.str(int(d.u8()))
	d.str(int(d.u8()))
	base := d.str(int(d.u8()))
	if d.bad || !validCommandID(base) {
		return ""
	}
	cp.w.setBase(name, base)
	return base
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
	// A record that carries its checkpoint ("before", as an earlier
	// version wrote it) would bypass the manifest the seal covers.
	if act.Before != nil || !cp.sealed(act) {
		return nil, newError(CodeUnsafeState, "", fmt.Sprintf("%s/%s/active/%s.json was not written by editguard for this workspace, so it is not acted on", StateDir, checkpointDir, id),
			"if the command was yours, its changes are still on disk; remove the record", nil)
	}
	if act.Before == nil {
		if act.Before, err = cp.loadManifest(act.Manifest, act.ManifestSum); err != nil {
			return nil, newError(CodeUnsafeState, "", fmt.Sprintf("the first checkpoint of command %s does not read back", id), "remove "+StateDir+"/"+checkpointDir+"/active/"+id+".json", err)
		}
	}
	return act, nil
}

// sealed reports whether the workspace's editguard wrote act (its seal
// verifies), with the manifest it names. A record of an earlier version,
// which carried no seal, is not.
func (cp *checkpoints) sealed(act *activeCommand) bool {
	return act.Seal != "" && act.ManifestSum != "" && hmac.Equal([]byte(act.Seal), []byte(cp.mac("command", act.sealFields())))
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
	slices.SortFunc(out, func(a, b *activeCommand) int { return cmp.Compare(a.StartNS, b.StartNS) })
	return out, nil
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
	acts, err := cp.activeRecords()
	if err != nil {
		return
	}
	var firsts []*cpManifest
	for _, a := range acts {
		m := a.Before
		if m == nil {
			// Sealed or not, a record keeps its objects.
			if m, err = cp.loadManifest(a.Manifest, ""); err != nil {
				return // unreadable: keep everything
			}
		}
		firsts = append(firsts, m)
	}
	if all {
		// Every object the store holds, each looked up in the
		// manifests' bases by its sum (names): no set of the sums of
		// every file is made.
		objs, err := cp.objects.ReadDir()
		if err != nil {
			return
		}
		candidates = nil
		for _, o := range objs {
			candidates = append(candidates, o.Name())
		}
	}
	for _, sum := range candidates {
		if !validSHA256(sum) {
			continue
		}
		live := keep.names(sum, false)
		for _, m := range firsts {
			live = live || m.names(sum, true)
		}
		if !live {
			cp.objects.Remove(sum)
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

// castagnoli is made on first use: making it at init would cost every
// start of the program, checkpoints or not.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

func (m *cpManifest) marshal() []byte {
	n := len(manifestMagic) + 18 + len(m.Exclude) + len(m.Index) + 4 + m.numFiles()*(2+37+64+40) + m.pathBytes()
	for _, p := range m.Unchecked {
		n += 2 + len(p)
	}
	return m.encode(make([]byte, 0, n), 0, nil)
}

// encode appends m, as a full manifest, to b and returns it. With spill,
// each time what it appended passes spillAt bytes it hands spill those
// bytes and goes on from b[:0]; what it returns is the rest. The CRC at
// the end covers them all.
func (m *cpManifest) encode(b []byte, spillAt int, spill func([]byte)) []byte {
	var crc uint32
	flush := func(b []byte) []byte {
		if spill == nil || len(b) < spillAt {
			return b
		}
		crc = crc32.Update(crc, castagnoli(), b)
		spill(b)
		return b[:0]
	}
	b = append(b, manifestMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.StartNS))
	b = binary.LittleEndian.AppendUint32(b, uint32(m.numFiles()))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Unchecked)))
	b = append(append(b, byte(len(m.Exclude))), m.Exclude...)
	b = append(append(b, byte(len(m.Index))), m.Index...)
	b = m.appendFiles(b, flush)
	for _, p := range m.Unchecked {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
		b = flush(append(b, p...))
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Update(crc, castagnoli(), b))
}

// manifestPiece is how many bytes of a full manifest writeFull writes at
// a time.
const manifestPiece = 256 << 10

// writeFull writes m in full as the manifest name, a piece at a time (a
// full manifest of 100,000 files is 16 MB: no buffer of it is made), as
// WriteFileVolatile writes a file: a temporary file renamed, no fsync. It
// returns the SHA-256 of what it wrote.
func (cp *checkpoints) writeFull(name string, m *cpManifest) (string, error) {
	f, tmp, err := cp.manifests.CreateTemp(".tmp-")
	if err != nil {
		return "", err
	}
	h := sha256.New()
	var werr error
	write := func(b []byte) {
		h.Write(b)
		if werr == nil {
			_, werr = f.Write(b)
		}
	}
	write(m.encode(make([]byte, 0, manifestPiece+4096), manifestPiece, write))
	if err := cmp.Or(werr, f.Close()); err != nil {
		cp.manifests.Remove(tmp)
		return "", err
	}
	if err := cp.manifests.Rename(tmp, name); err != nil {
		cp.manifests.Remove(tmp)
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// appendEntry appends the file p's entry e, as a manifest lists it.
func appendEntry(b []byte, p string, e cpEntry) []byte {
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
	return b
}

// A delta manifest is a checkpoint written as what differs from a full
// manifest (its base, which holds its fileBase): the files changed or
// added, the files removed, and the unchecked paths in full.
// Integers are little-endian; entries and paths are encoded as in a full
// manifest.
//
//	"egckpt2\n"
//	start_ns int64, changed uint32, unchecked uint32, removed uint32
//	exclude: length uint8, hex; index: length uint8, hex
//	base: length uint8, name; base sha256 hex (64)
//	per changed file: as a full manifest's, in path order
//	per unchecked path, then per removed path: length uint16, path
//	crc32c uint32
//
// A delta is read with its base, which must hash to the sum it names. This
// version writes deltas on full manifests only; an earlier one wrote them
// on deltas too, which are read down their chain to a full manifest, at
// most maxChain deltas deep.
const deltaMagic = "egckpt2\n"

// maxChain is how many deltas a manifest read may sit on.
const maxChain = 64

// marshalDelta encodes m as a delta on the full manifest baseName, of
// SHA-256 baseSum, which holds m's base.
func (m *cpManifest) marshalDelta(baseName, baseSum string) []byte {
	changed := m.sortedOver()
	removed := slices.Sorted(maps.Keys(m.gone))
	b := make([]byte, 0, 256+len(changed)*200+len(removed)*64)
	b = append(b, deltaMagic...)
	b = binary.LittleEndian.AppendUint64(b, uint64(m.StartNS))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(changed)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.Unchecked)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(removed)))
	b = append(append(b, byte(len(m.Exclude))), m.Exclude...)
	b = append(append(b, byte(len(m.Index))), m.Index...)
	b = append(append(b, byte(len(baseName))), baseName...)
	b = append(b, baseSum...)
	for _, p := range changed {
		b = appendEntry(b, p, m.over[p])
	}
	for _, list := range [][]string{m.Unchecked, removed} {
		for _, p := range list {
			b = binary.LittleEndian.AppendUint16(b, uint16(len(p)))
			b = append(b, p...)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli()))
}

// cpDelta is a delta manifest, decoded: the files changed (paths and
// their entries) and removed, in path order.
type cpDelta struct {
	start                         int64
	exclude, index, base, baseSum string
	unchecked, paths, removed     []string
	entries                       []cpEntry
}

// unmarshalDelta decodes a delta manifest, checking it as
// unmarshalManifest checks a full one.
func unmarshalDelta(data []byte) (*cpDelta, error) {
	if len(data) < len(deltaMagic)+4 || string(data[:len(deltaMagic)]) != deltaMagic {
		return nil, errManifest
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errManifest)
	}
	d := &decoder{b: body, s: string(body), off: len(deltaMagic)}
	out := &cpDelta{start: int64(d.u64())}
	nf, nu, nr := int(d.u32()), int(d.u32()), int(d.u32())
	out.exclude = d.str(int(d.u8()))
	out.index = d.str(int(d.u8()))
	out.base = d.str(int(d.u8()))
	out.baseSum = d.str(64)
	if d.bad || nf > len(body)/100 || nu > len(body)/2 || nr > len(body)/2 || !validCommandID(out.base) || !validSHA256(out.baseSum) {
		return nil, errManifest
	}
	out.paths, out.entries = make([]string, 0, nf), make([]cpEntry, 0, nf)
	prev := ""
	for range nf {
		p, e := d.entry()
		if d.bad || p <= prev || !manifestPath(p) || !validSHA256(e.SHA256) || !lowerHex(e.Git) || e.Backed && e.Git == "" {
			return nil, errManifest
		}
		prev = p
		out.paths, out.entries = append(out.paths, p), append(out.entries, e)
	}
	for i, n := range []int{nu, nr} {
		prev = ""
		for range n {
			p := d.str(int(d.u16()))
			if d.bad || p <= prev || !manifestPath(p) {
				return nil, errManifest
			}
			prev = p
			if i == 0 {
				out.unchecked = append(out.unchecked, p)
			} else {
				out.removed = append(out.removed, p)
			}
		}
	}
	if d.bad || d.off != len(body) {
		return nil, errManifest
	}
	return out, nil
}

// entry decodes one file's entry.
func (d *decoder) entry() (string, cpEntry) {
	p := d.str(int(d.u16()))
	e := cpEntry{Size: int64(d.u64()), MtimeNS: int64(d.u64()), CtimeNS: int64(d.u64()), Ino: d.u64(), Mode: d.u32()}
	flags := d.u8()
	e.Backed = flags&entryBacked != 0
	e.SHA256 = d.str(64)
	if flags&entryGit != 0 {
		e.Git = d.str(40)
	}
	return p, e
}

var errManifest = errors.New("checkpoint manifest does not parse")

// unmarshalManifest decodes a manifest, checking every length against the
// data, every sum's form and every path's (relative, clean, no . or ..).
func unmarshalManifest(data []byte) (*cpManifest, error) {
	if len(data) < len(manifestMagic)+4 || string(data[:len(manifestMagic)]) != manifestMagic {
		return nil, errManifest
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(data[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errManifest)
	}
	// The file's bytes seen as a string, not copied (16 MB at 100,000
	// files): every string below is a slice of it, and none is kept
	// (the paths are copied into the base, the sums decoded, the other
	// strings cloned). data is only read, here and by the caller.
	s := unsafe.String(unsafe.SliceData(body), len(body))
	d := &decoder{b: body, s: s, off: len(manifestMagic)}
	m := &cpManifest{StartNS: int64(d.u64())}
	nf, nu := int(d.u32()), int(d.u32())
	m.Exclude = d.str(int(d.u8()))
	m.Index = d.str(int(d.u8()))
	if d.bad || nf > len(s)/100 || nu > len(s)/2 {
		return nil, errManifest
	}
	// The files go into a base of their own (packed: see fileBase), and
	// the strings kept are copies, so that s is not held.
	m.Exclude, m.Index = strings.Clone(m.Exclude), strings.Clone(m.Index)
	bb := newBaseBuilder(nf, max(0, len(s)-nf*(2+37+64+40))) // at most the paths' bytes
	prev := ""
	for range nf {
		p, e := d.entry()
		if d.bad || p <= prev || !manifestPath(p) || !validSHA256(e.SHA256) || !lowerHex(e.Git) || e.Backed && e.Git == "" {
			return nil, errManifest
		}
		bb.add(p, e)
		prev = p
	}
	m.base = bb.base()
	m.n = m.base.len()
	prev = ""
	for range nu {
		p := d.str(int(d.u16()))
		if d.bad || p <= prev || !manifestPath(p) {
			return nil, errManifest
		}
		m.Unchecked, prev = append(m.Unchecked, strings.Clone(p)), p
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

// scan checkpoints the covered files, reading only those whose stat differs
// from prev's (or is racy), keeping each content not yet kept, and making
// what it stored durable before it returns. A content is kept in git's
// objects when the file's bytes are the blob git's index lists for it (see
// gitView), else in the store. notChecked says what it did not cover.
//
// The walk hands each directory's files to scanWorkers goroutines, which
// stat them (and read and store those that changed) while it goes on: on
// a tree of many files the fstatat calls are most of a scan's time.
func (cp *checkpoints) scan(ctx context.Context, w *Workspace, prev *cpManifest) (*cpManifest, []string, error) {
	include, lines, rules := w.checkpointCoverage()
	notChecked := coverageNote(lines)
	sc := &scanner{cp: cp, w: w, prev: prev, g: cp.git(w),
		m: &cpManifest{StartNS: time.Now().UnixNano(), Exclude: rules}}
	if prev != nil {
		// Made from prev: its files unchanged stay in the base it
		// shares with prev (no copy of the tree's entries, and a delta
		// on disk), the others are set or removed (derived).
		sc.m.deriveFiles(prev)
		sc.derived = true
		sc.seenBase = make([]bool, sc.m.base.len())
		sc.seenOver = map[string]struct{}{}
	}
	sc.m.Index = sc.g.identity()
	sc.sameIndex = prev != nil && sc.m.Index != "" && sc.m.Index == prev.Index
	if prev == nil || !sc.sameIndex {
		sc.g.load() // before the workers share it
	}
	if prev == nil {
		// The files go straight into a base, in the order the workers
		// meet them, sorted at the end (sortedBase): as many as git's
		// index lists, about.
		n := 0
		if sc.g.index != nil {
			n = sc.g.index.Len()
		}
		sc.fill = newBaseBuilder(n, 0)
	}
	err := sc.run(func(submit func(dirfd int, dir string, names []string) bool) error {
		return w.walkWith(ctx, ".", &walker{include: include, dir: submit})
	})
	if err != nil {
		return nil, nil, err
	}
	sc.dropUnseen()
	return sc.finish(notChecked)
}

// dropUnseen removes from a derived scan's manifest the files of prev the
// walk did not put or find unchanged: gone, no longer covered, no longer
// regular files, or not checked now.
func (sc *scanner) dropUnseen() {
	if !sc.derived {
		return
	}
	m := sc.m
	for i, seen := range sc.seenBase {
		if !seen {
			m.delFile(m.base.path(i))
		}
	}
	for p := range m.over {
		if _, seen := sc.seenOver[p]; !seen && !m.base.has(p) {
			m.delFile(p)
		}
	}
}

// checkpoint scans for a checkpoint from prev, the manifest named
// prevName (nil and "" for none): from the change journal's changes since
// the mark taken before prev's scan when the journal vouches for them
// (scanDirty), else in full (scan). It returns the mark taken before this
// scan, for the manifest it makes (setMark), zero without a journal.
func (cp *checkpoints) checkpoint(ctx context.Context, w *Workspace, prev *cpManifest, prevName string) (*cpManifest, []string, JournalMark, error) {
	j := w.journal()
	if j == nil {
		m, nc, err := cp.scan(ctx, w, prev)
		return m, nc, JournalMark{}, err
	}
	var since JournalMark
	if prev != nil && prevName != "" {
		var ok bool
		if since, ok = w.markOf(prevName); !ok {
			since, _ = cp.loadWatchMark(prevName)
		}
	}
	changes, now, ok := j.Since(since)
	if ok && since.ID != "" && prev != nil {
		m, nc, err := cp.scanDirty(ctx, w, prev, changes)
		if !errors.Is(err, errJournal) {
			w.jr.dirtyScans.Add(1)
			return m, nc, now, err
		}
	}
	w.jr.fullScans.Add(1)
	m, nc, err := cp.scan(ctx, w, prev)
	return m, nc, now, err
}

// remember makes the manifest m, saved as name with SHA-256 sum after the
// mark, known to this process: its mark, and m itself (loadManifest
// returns it without reading it again).
func (cp *checkpoints) remember(name, sum string, m *cpManifest, mark JournalMark) {
	cp.w.setMark(name, mark)
	cp.cacheManifest(name, sum, m)
}

// run runs walk, which hands each directory's files to submit, with
// scanWorkers goroutines statting (and reading and storing) them while it
// goes on.
func (sc *scanner) run(walk func(submit func(dirfd int, dir string, names []string) bool) error) error {
	type batch struct {
		fd    int
		dir   string
		names []string
	}
	jobs := make(chan batch, 16)
	var wg sync.WaitGroup
	for range scanWorkers() {
		wg.Go(func() {
			var buf []byte
			for b := range jobs {
				for _, name := range b.names {
					if sc.failed.Load() {
						break
					}
					buf = sc.file(b.fd, path.Join(b.dir, name), name, buf)
				}
				unix.Close(b.fd)
			}
		})
	}
	err := walk(func(dirfd int, dir string, names []string) bool {
		fd, err := unix.FcntlInt(uintptr(dirfd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			sc.fail(ioError(dir, err))
			return false
		}
		jobs <- batch{fd, dir, names}
		return !sc.failed.Load()
	})
	close(jobs)
	wg.Wait()
	if err == nil {
		err = sc.err
	}
	return err
}

// finish makes what the scan stored durable and returns its manifest and
// what it did not check (notChecked, and the files it did not read).
func (sc *scanner) finish(notChecked []string) (*cpManifest, []string, error) {
	// What the command may displace is durable before it runs.
	if cp := sc.cp; cp.deferFlush {
		names, n := sc.stored, sc.nstored
		cp.pending = func() error { return cp.flush(names, n) }
	} else if err := sc.cp.flush(sc.stored, sc.nstored); err != nil {
		return nil, nil, stateError("sync the checkpoint", err)
	}
	m := sc.m
	if sc.fill != nil {
		m.base = sc.fill.sortedBase()
		m.n = m.base.len()
	}
	m.seal()
	slices.Sort(m.Unchecked)
	m.Unchecked = slices.Compact(m.Unchecked)
	if len(m.Unchecked) > 0 {
		msg := fmt.Sprintf("%d files over %d bytes or unreadable are not checked", len(m.Unchecked), sc.w.opts.MaxFileSize)
		names := m.Unchecked
		if len(names) > maxNotChecked {
			names = append(slices.Clone(names[:maxNotChecked]), "...")
		}
		notChecked = append(notChecked, msg+": "+strings.Join(names, ", "))
	}
	return m, notChecked, nil
}

// coverageNote is what a scan says it does not check, given the include
// patterns' lines.
func coverageNote(lines []string) []string {
	if len(lines) > 0 {
		return []string{fmt.Sprintf("files a .gitignore ignores (but for those matching %s outside ignored directories), symbolic links and special files are not checked", strings.Join(lines, ", "))}
	}
	return []string{"files a .gitignore ignores, symbolic links and special files are not checked"}
}

// errJournal says a journal's changes cannot be used: scan in full.
var errJournal = errors.New("the change journal cannot be used")

// scanDirty is scan from prev and the changes a journal reported since the
// mark taken before prev's scan began: prev's entries, but for the changed
// paths, which it stats (and reads, as scan does) again, and the whole
// subtree of each changed path that is a directory now. Its manifest is
// the one scan would make. When git's index changed since prev, the files
// whose blob it lists changed are checked too (indexMoved). It fails with
// errJournal when it cannot be used: the coverage rules changed since
// prev, a .gitignore did, the repository came or went, or its index does
// not read (the caller then scans in full).
func (cp *checkpoints) scanDirty(ctx context.Context, w *Workspace, prev *cpManifest, changes []JournalChange) (*cpManifest, []string, error) {
	include, lines, rules := w.checkpointCoverage()
	if prev == nil || rules != prev.Exclude {
		return nil, nil, errJournal
	}
	for _, c := range changes {
		if !manifestPath(c.Path) || path.Base(c.Path) == ".gitignore" {
			return nil, nil, errJournal
		}
	}
	g := cp.git(w)
	idx := g.identity()
	if idx != prev.Index {
		// git's index changed (git status rewrites it often): the files
		// whose blob it lists now is not the one prev recorded are
		// checked again, as if the journal had named them.
		if idx == "" || prev.Index == "" {
			return nil, nil, errJournal
		}
		moved, ok := indexMoved(prev, g)
		if !ok {
			return nil, nil, errJournal
		}
		for _, p := range moved {
			changes = append(changes, JournalChange{Path: p})
		}
	}
	sc := &scanner{cp: cp, w: w, prev: prev, g: g, track: true,
		m: &cpManifest{StartNS: time.Now().UnixNano(), Exclude: rules, Index: idx}}
	sc.m.deriveFiles(prev)
	sc.sameIndex = idx != "" && idx == prev.Index
	if !sc.sameIndex {
		g.load()
	}
	prevOver := prev.sortedOver()
	unchecked := map[string]bool{}
	for _, p := range prev.Unchecked {
		unchecked[p] = true
	}
	dropped := map[string]bool{}
	drop := func(p string) {
		if _, ok := prev.file(p); ok {
			sc.mu.Lock() // the workers put files meanwhile
			sc.m.delFile(p)
			sc.mu.Unlock()
			dropped[p] = true
		}
		delete(unchecked, p)
	}
	// dropUnder drops what was below p, if p was not a file (a file has
	// nothing below it).
	dropUnder := func(p string) {
		if _, ok := prev.file(p); ok {
			return
		}
		prev.under(p, prevOver, drop)
		for u := range unchecked {
			if strings.HasPrefix(u, p+"/") {
				delete(unchecked, u)
			}
		}
	}
	slices.SortFunc(changes, func(a, b JournalChange) int { return strings.Compare(a.Path, b.Path) })
	cover := &coverage{w: w, include: include}
	err := sc.run(func(submit func(dirfd int, dir string, names []string) bool) error {
		walked := ""
		for _, c := range changes {
			p := c.Path
			if walked != "" && strings.HasPrefix(p, walked+"/") {
				continue // walked with its directory
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			drop(p)
			dir, name := path.Split(p)
			if dir = strings.TrimSuffix(dir, "/"); dir == "" {
				dir = "."
			}
			d, fd := cover.dir(dir, true)
			if fd < 0 {
				dropUnder(p) // its directory is gone or not covered
				continue
			}
			elems := splitRel(p)
			var st unix.Stat_t
			err := unix.Fstatat(fd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
			switch {
			case err != nil || strings.EqualFold(name, StateDir) || name == ".git":
				dropUnder(p)
			case st.Mode&unix.S_IFMT == unix.S_IFDIR:
				dropUnder(p)
				walked = p
				if d.ps.ignored(elems, true) {
					break
				}
				sub, err := unix.Openat(fd, name, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
				if err != nil {
					break // unreadable, or replaced by a symlink: a walk skips it
				}
				if _, err := walkDir(ctx, sub, p, d.ps, &walker{include: include, dir: submit}); err != nil {
					unix.Close(fd)
					return err
				}
			case st.Mode&unix.S_IFMT == unix.S_IFREG:
				dropUnder(p)
				if d.ps.ignored(elems, false) && !include.ignored(elems, false) {
					break
				}
				if !submit(fd, dir, []string{name}) {
					unix.Close(fd)
					return nil
				}
			default:
				dropUnder(p)
			}
			unix.Close(fd)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	for u := range unchecked {
		sc.m.Unchecked = append(sc.m.Unchecked, u)
	}
	// What differs from prev, for diffPaths.
	sc.m.from = prev
	prev.from = nil // a chain in memory would keep every manifest
	for _, p := range sc.touched {
		e, was := prev.file(p)
		if cur, _ := sc.m.file(p); !was || e != cur {
			sc.m.changed = append(sc.m.changed, p)
		}
	}
	slices.Sort(sc.m.changed)
	sc.m.changed = slices.Compact(sc.m.changed)
	for p := range dropped {
		if _, is := sc.m.file(p); !is {
			sc.m.removed = append(sc.m.removed, p)
		}
	}
	slices.Sort(sc.m.removed)
	return sc.finish(coverageNote(lines))
}

// indexMoved returns the paths of prev's files whose blob in git's index,
// as it is now, is not the one prev's entry recorded (cpEntry.Git): what a
// checkpoint from prev checks again when the index changed. A walk of the
// index and prev's files side by side, in memory (eachGitBlob); false if
// the index does not read.
//
// prev's entries record the blobs of the index prev was checked against,
// so no copy of that index is kept between checkpoints: the walk costs
// about what comparing it with the new one would.
func indexMoved(prev *cpManifest, g *gitView) ([]string, bool) {
	g.load()
	ix := g.index
	if ix == nil {
		return nil, false
	}
	var moved []string
	i, n := 0, ix.Len()
	prev.eachGitBlob(func(p string, blob gitobj.ID, listed bool) {
		for ; i < n; i++ {
			q, id := ix.Entry(i)
			if c := strings.Compare(q, p); c > 0 {
				break
			} else if c == 0 {
				if !listed || blob != id {
					moved = append(moved, p)
				}
				i++
				return
			}
		}
		if listed {
			moved = append(moved, p) // no longer listed
		}
	})
	return moved, true
}

// scanWorkers is how many goroutines stat and read files for a scan.
func scanWorkers() int { return min(max(runtime.GOMAXPROCS(0), 1), 4) }

// scanner is one scan's state, shared by its workers; mu guards m, the
// stored objects and err.
type scanner struct {
	cp        *checkpoints
	w         *Workspace
	prev      *cpManifest
	g         *gitView
	sameIndex bool

	// track says to list in touched every path put in m.
	track bool
	// derived says m was made from prev (a full scan with a stat cache):
	// a file unchanged since prev is left as it is, and seenBase (by
	// index in m's base) and seenOver (the others) say which files the
	// walk met; dropUnseen removes the rest.
	derived  bool
	seenBase []bool
	seenOver map[string]struct{}
	// fill, for a scan from nothing (no prev), takes the files put, in
	// no order, instead of m: finish makes it m's base (sortedBase).
	fill *baseBuilder

	mu      sync.Mutex
	m       *cpManifest
	touched []string
	stored  []string // the objects to make durable; past engine.FsyncObjects (oneByOne), only counted
	nstored int
	// oneByOne is whether the objects are flushed one by one past
	// engine.FsyncObjects too (oneByOne of the store's file system), asked once.
	oneByOne     bool
	oneByOneOnce sync.Once
	err          error
	failed       atomic.Bool
}

func (sc *scanner) fail(err error) {
	sc.mu.Lock()
	if sc.err == nil {
		sc.err = err
	}
	sc.mu.Unlock()
	sc.failed.Store(true)
}

func (sc *scanner) put(p string, e cpEntry, unchecked bool) {
	sc.mu.Lock()
	if unchecked {
		sc.m.Unchecked = append(sc.m.Unchecked, p)
	} else {
		sc.setLocked(p, e)
	}
	sc.mu.Unlock()
}

// setLocked sets p's entry in m; the caller holds sc.mu.
func (sc *scanner) setLocked(p string, e cpEntry) {
	if sc.fill != nil {
		sc.fill.add(p, e)
		return
	}
	sc.m.setFile(p, e)
	if sc.track {
		sc.touched = append(sc.touched, p)
	}
	if sc.derived {
		sc.seenLocked(p)
	}
}

// seen notes that the walk met the file p, unchanged since prev (a
// derived scan). Workers meet each path once: the base's flags are
// written without the lock, each by one.
func (sc *scanner) seen(p string) {
	if i := sc.m.base.index(p); i >= 0 {
		sc.seenBase[i] = true
		return
	}
	sc.mu.Lock()
	sc.seenOver[p] = struct{}{}
	sc.mu.Unlock()
}

// seenLocked is seen with sc.mu held.
func (sc *scanner) seenLocked(p string) {
	if i := sc.m.base.index(p); i >= 0 {
		sc.seenBase[i] = true
		return
	}
	sc.seenOver[p] = struct{}{}
}

// file checkpoints the file name, at p, in the directory dirfd; buf is the
// worker's buffer, which it returns.
func (sc *scanner) file(dirfd int, p, name string, buf []byte) []byte {
	var st unix.Stat_t
	if err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return buf // gone, or no longer a file
	}
	e := cpEntry{Size: st.Size, MtimeNS: st.Mtim.Nano(), CtimeNS: st.Ctim.Nano(), Ino: st.Ino, Mode: uint32(st.Mode)}
	if prev := sc.prev; prev != nil {
		if blob, listed, ok := prev.cachedStat(p, e, prev.StartNS-racyWindow); ok {
			// Unchanged. Unless git's index moved on and lists another
			// blob for it, what kept its content still does.
			if !sc.sameIndex {
				id, has := sc.g.lookup(p)
				ok = has == listed && id == blob
			}
			switch {
			case ok && sc.derived:
				sc.seen(p) // m has prev's entry, which is e's
				return buf
			case ok:
				q, _ := prev.file(p)
				e.SHA256, e.Git, e.Backed = q.SHA256, q.Git, q.Backed
				sc.put(p, e, false)
				return buf
			}
		}
	}
	if st.Size > sc.w.opts.MaxFileSize {
		sc.put(p, e, true)
		return buf
	}
	fd, _, err := openFileAt(dirfd, name)
	if errors.Is(err, unix.ENOENT) {
		return buf // gone since the stat
	}
	if err != nil {
		sc.put(p, e, true)
		return buf
	}
	data, err := readFDInto(buf[:0], fd, sc.w.opts.MaxFileSize)
	unix.Close(fd)
	if err != nil {
		sc.put(p, e, true)
		return buf
	}
	buf = data
	e.SHA256 = sha256Hex(data)
	e.Git, e.Backed = sc.g.check(p, data)
	if e.Backed {
		sc.put(p, e, false)
		return buf
	}
	objects := sc.cp.objects
	if st, err := objects.Stat(e.SHA256); err != nil || !st.Exists {
		if err := objects.WriteFileVolatile(e.SHA256, data, 0o600); err != nil {
			sc.fail(stateError("store "+p+" in the checkpoint", err))
			return buf
		}
	} else if sc.flushed(e.SHA256) {
		sc.put(p, e, false)
		return buf
	}
	// Written now, or present but perhaps written by a scan that stopped
	// before its flush: made durable before the scan returns.
	sc.mu.Lock()
	if sc.nstored++; sc.nstored <= engine.FsyncObjects || sc.flushOneByOne() {
		sc.stored = append(sc.stored, e.SHA256)
	}
	sc.setLocked(p, e)
	sc.mu.Unlock()
	return buf
}

// flushOneByOne reports whether the store's file system needs every
// object fsynced, however many (oneByOne); it asks once per scan. The
// caller holds sc.mu.
func (sc *scanner) flushOneByOne() bool {
	sc.oneByOneOnce.Do(func() {
		sc.oneByOne = engine.OneByOne(engine.FsyncObjects+1, int(sc.cp.objects.File().Fd()))
	})
	return sc.oneByOne
}

// flushed reports whether prev, a checkpoint whose scan flushed the store,
// names the object sum as one the store holds.
func (sc *scanner) flushed(sum string) bool {
	return sc.prev != nil && sc.prev.names(sum, false)
}

// flush makes n new objects durable: those named one by one, if they are
// all of them (their fsyncs issued at once, which a journaling file system
// commits together, then the directory's), else with one syncfs.
func (cp *checkpoints) flush(names []string, n int) error {
	if n == 0 {
		return nil
	}
	if n > len(names) {
		return engine.SyncFS(int(cp.objects.File().Fd()))
	}
	slices.Sort(names)
	names = slices.Compact(names) // files of the same content
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() {
			f, err := cp.objects.Open(name, os.O_RDONLY, 0)
			if err == nil {
				err = f.Sync()
				f.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return cp.objects.Sync()
}

// excludeSum is the SHA-256 of .git/info/exclude, "" if it is not a
// regular file of at most maxIgnoreBytes.
func (w *Workspace) excludeSum() string {
	f, err := w.root.OpenFile(".git/info", os.O_RDONLY|engine.ODirectory, 0)
	if err != nil {
		return ""
	}
	defer f.Close()
	fd, size, err := openFileAt(int(f.Fd()), "exclude")
	if err != nil {
		return ""
	}
	defer unix.Close(fd)
	if size > maxIgnoreBytes {
		return ""
	}
	data, err := readFDInto(make([]byte, 0, size+512), fd, maxIgnoreBytes)
	if err != nil {
		return ""
	}
	return sha256Hex(data)
}

// includeFile is where a workspace lists the ignored files its checkpoints
// cover (see Options.CheckpointInclude).
const includeFile = "checkpoint-include"

// checkpointCoverage returns the patterns of the ignored files checkpoints
// cover, parsed and as lines, and a sum of what decides coverage besides
// the .gitignore files (those patterns and .git/info/exclude).
func (w *Workspace) checkpointCoverage() (ignoreMatcher, []string, string) {
	lines := w.opts.CheckpointInclude
	if lines == nil {
		lines = DefaultCheckpointInclude
		if data, err := readBounded(w.state, includeFile, nil, maxIgnoreBytes); err == nil {
			lines = nil
			for l := range strings.Lines(string(data)) {
				if l = strings.TrimRight(l, "\r\n"); l != "" && !strings.HasPrefix(l, "#") {
					lines = append(lines, l)
				}
			}
		}
	}
	var include ignoreMatcher
	for _, l := range lines {
		include = append(include, parseIgnore(l, nil))
	}
	return include, lines, sha256Hex([]byte(w.excludeSum() + "\x00" + strings.Join(lines, "\n")))
}
