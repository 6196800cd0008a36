package mcpserver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that changes files may reach the server twice: a client that
// lost the answer (a dropped connection, a timeout) sends it again. It
// must not apply twice, nor fail the second time with STALE_FILE against
// its own first write. A session remembers the results of such calls by
// a key that names the call, and answers a call it has seen, with the
// same tool and arguments, with the first result, without running it
// again. A call that arrives while its first is running waits for it.
//
// The key must name one call of one client, whatever happens to the
// client: a key that a new call can carry by accident would answer it
// with another call's result, a change that this call never made. So:
//
//   - The call's idempotency key (MetaIdempotencyKey in the request's
//     _meta), chosen by the client, at random for each call, and sent
//     again with the call's copies. It is the one key that names a
//     2026-07-28 call across everything: such a call has no MCP session,
//     its session is the token's (or a handle's) and serves every client
//     of the token, and a client that starts again numbers its requests
//     from the start again, so a JSON-RPC id names nothing across clients.
//   - Otherwise, over HTTP with an MCP session (2025-11-25 and earlier),
//     the JSON-RPC id within that MCP session: the protocol forbids a
//     client to use an id twice in one session, and a client that starts
//     again opens a new one. The SDK does not hand the id to a tool
//     handler on stdio, where only the idempotency key works.
//   - A 2026-07-28 call over HTTP without a key is taken for a re-send
//     only when it is the very same request (JSON-RPC id, tool and
//     arguments) as the last call its session received, with no other
//     call in between (immediate): the copy a transport sends again when
//     it lost the answer. A client started again reads before it writes,
//     or its first call is the same as the one it lost; either way the
//     answer below is only given while it is true.
//
// An answer is given again only while it is still true. A re-sent change
// whose first answer no longer holds (another client, or another tool,
// changed the file since: it no longer holds the sha256 the answer gave,
// or a file the answer removed is back) gets STALE_FILE, marked
// MetaReplayed, saying that the call was carried out once and what the
// files hold now; it is not carried out again. Running it again would be
// wrong both ways: an append or an edit would apply twice, and a write
// would overwrite the later change that the client has not seen, a lost
// update. The first change and the later one are both in history.
//
// Only successes are remembered: a call that failed changed nothing, and
// runs again when it comes again.

// MetaIdempotencyKey is the key of a tool call's _meta that names the
// call: calls of one session with the same key are one call.
const MetaIdempotencyKey = "editguard/idempotency_key"

// MetaReplayed marks, in a result's _meta, the answer to a call made
// again: the change was made once, by the first call.
const MetaReplayed = "editguard/replayed"

// rpcIDHeader carries, from the endpoint to the tool handler (see
// eraRouter), the MCP session id and the JSON-RPC id of a call made in an
// MCP session over HTTP, separated by a space; a client's own is dropped.
const rpcIDHeader = "Editguard-Jsonrpc-Id"

// rpcIDAge bounds the age of a result remembered by JSON-RPC id; one
// remembered by idempotency key is kept for the replay's age.
const rpcIDAge = 2 * time.Minute

// maxKeyBytes bounds an idempotency key (a UUID is 36 bytes).
const maxKeyBytes = 256

// replayKey names a call for replay: by idempotency key (explicit) or
// JSON-RPC id in an MCP session.
type replayKey struct {
	name     string
	explicit bool
	// immediate: a re-send only of the session's last call (a 2026-07-28
	// JSON-RPC id, see above).
	immediate bool
}

// replayKeyOf returns the key of req, or an error for a key that is not a
// string of 1 to maxKeyBytes bytes.
func replayKeyOf(req *mcp.CallToolRequest) (replayKey, error) {
	if v, ok := req.Params.Meta[MetaIdempotencyKey]; ok {
		k, _ := v.(string)
		if k == "" || len(k) > maxKeyBytes {
			return replayKey{}, &editguard.Error{Code: editguard.CodeInvalidArgument,
				Message:      fmt.Sprintf("_meta[%q] must be a string of 1 to %d bytes", MetaIdempotencyKey, maxKeyBytes),
				RecoveryHint: "give each call a random key of its own (a UUID), and the same key to its copies sent again"}
		}
		return replayKey{name: "key:" + k, explicit: true}, nil
	}
	if req.Extra != nil && req.Extra.Header != nil {
		if id := req.Extra.Header.Get(rpcIDHeader); id != "" {
			_, modern := strings.CutPrefix(id, modernIDPrefix)
			return replayKey{name: "rpc:" + id, immediate: modern}, nil
		}
	}
	return replayKey{}, nil
}

// replay is the results a session remembers, at most max of them and
// none older than age. It is safe for concurrent use.
type replay struct {
	ws  *editguard.Workspace // where an answer is checked before it is given again
	max int
	age time.Duration

	mu    sync.Mutex
	byKey map[string]*replayEntry
	order []*replayEntry // oldest first
	calls uint64         // the session's calls so far, changes or not
}

type replayEntry struct {
	key    string
	digest [sha256.Size]byte // of the tool and its arguments
	at     time.Time         // of the first call
	call   uint64            // its number among the session's calls
	until  time.Time         // forgotten then
	done   chan struct{}     // closed when res is set
	res    *mcp.CallToolResult
	claims []claim // what res says the files hold
}

func newReplay(ws *editguard.Workspace, max int, age time.Duration) *replay {
	return &replay{ws: ws, max: max, age: age, byKey: map[string]*replayEntry{}}
}

// do runs run, unless the call named k was seen with the same tool and
// arguments: then it answers with the first call's result if that is
// still true of the files (see answer). An idempotency key seen with
// other arguments is INVALID_ARGUMENT; a JSON-RPC id seen with other
// arguments names a new call. A failure is not remembered, nor a result
// that asks for input (input_required): the call comes again with the
// answer. run returns the result and what it says the files hold.
func (p *replay) do(ctx context.Context, k replayKey, tool string, args []byte, run func() (*mcp.CallToolResult, []claim)) (*mcp.CallToolResult, error) {
	if k.name == "" {
		res, _ := run()
		return res, nil
	}
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(args)
	now := time.Now()
	e := &replayEntry{key: k.name, at: now, until: now.Add(p.age), done: make(chan struct{})}
	if !k.explicit {
		e.until = now.Add(min(p.age, rpcIDAge))
	}
	h.Sum(e.digest[:0])
	p.mu.Lock()
	p.evict(now)
	last := p.calls
	p.calls++
	e.call = p.calls
	if seen := p.byKey[k.name]; seen != nil && (!k.immediate || seen.call == last) {
		if seen.digest == e.digest {
			p.mu.Unlock()
			return p.answer(ctx, seen, tool)
		}
		if k.explicit {
			p.mu.Unlock()
			return errorResult(&editguard.Error{Code: editguard.CodeInvalidArgument,
				Message:      "this idempotency key was used for another call (another tool or other arguments)",
				Details:      map[string]any{"tool": tool},
				RecoveryHint: "give every distinct call its own idempotency key"}), nil
		}
		p.remove(seen)
	}
	p.byKey[k.name] = e
	p.order = append(p.order, e)
	p.mu.Unlock()

	e.res, e.claims = run()
	if e.res.IsError || e.res.InputRequests != nil {
		p.mu.Lock()
		p.remove(e)
		p.mu.Unlock()
	}
	close(e.done)
	return e.copy(false), nil
}

// note counts a call of the session that is not remembered (one that
// changes no file): a call after it is no longer an immediate re-send of
// the one before.
func (p *replay) note() {
	p.mu.Lock()
	p.calls++
	p.mu.Unlock()
}

// answer waits for e's result and returns a copy marked MetaReplayed, if
// the files still hold what it says; else STALE_FILE, marked
// MetaReplayed, with what they hold now (see the top of this file).
func (p *replay) answer(ctx context.Context, e *replayEntry, tool string) (*mcp.CallToolResult, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if e.res.InputRequests != nil {
		return e.copy(false), nil
	}
	changed, now := p.check(e.claims)
	if len(changed) == 0 {
		return e.copy(true), nil
	}
	ago := time.Since(e.at).Round(time.Second)
	what := "this " + tool + " call was"
	if strings.HasPrefix(e.key, "key:") {
		what = fmt.Sprintf("this %s call (idempotency key %q) was", tool, strings.TrimPrefix(e.key, "key:"))
	}
	err := &editguard.Error{Code: editguard.CodeStaleFile,
		Message: fmt.Sprintf("%s carried out once already, %s ago, and is not carried out again; what it answered then is no longer true: %s",
			what, ago, strings.Join(changed, "; ")),
		Details: map[string]any{"replayed": true, "now": now},
		RecoveryHint: "the file changed after this call: read it again to see what it holds now, then decide again with a new call; " +
			"every content it held is kept in its history (file_history)"}
	if len(e.claims) == 1 {
		err.Details["path"] = e.claims[0].path
	}
	res := errorResult(err)
	res.Meta[MetaReplayed] = true
	return res, nil
}

// claim is one thing a change's answer says of the files: path holds
// sha256, or does not exist (gone), or is a directory (dir).
type claim struct {
	path   string
	sha256 string
	gone   bool
	dir    bool
}

// claimsOf returns what the result of a change (toolset.Output.Structured)
// says the files hold now. A dry run says nothing of them, nor a tool
// that changes no file (begin_session, begin_turn).
func claimsOf(structured any) []claim {
	switch r := structured.(type) {
	case *editguard.Result:
		if r == nil || r.DryRun {
			return nil
		}
		var c []claim
		if r.MovedFrom != "" {
			c = append(c, claim{path: r.MovedFrom, gone: true})
		}
		if r.Deleted {
			return append(c, claim{path: r.Path, gone: true})
		}
		return append(c, claim{path: r.Path, sha256: r.SHA256})
	case *editguard.PatchResult:
		if r == nil || r.DryRun {
			return nil
		}
		var c []claim
		for _, f := range r.Files {
			switch {
			case f.Op == "move":
				c = append(c, claim{path: f.Path, gone: true}, claim{path: f.MovedTo, sha256: f.SHA256})
			case f.Op == "delete" || f.SHA256 == "":
				c = append(c, claim{path: f.Path, gone: true})
			default:
				c = append(c, claim{path: f.Path, sha256: f.SHA256})
			}
		}
		return c
	case *editguard.DirResult:
		if r == nil {
			return nil
		}
		return []claim{{path: r.Path, dir: true}}
	}
	return nil
}

// check observes the files of claims and returns, for those that no
// longer hold what their claim says, a sentence each, and what every
// file holds now.
func (p *replay) check(claims []claim) (changed []string, now []map[string]any) {
	for _, c := range claims {
		if c.dir {
			fi, err := p.ws.Stat(c.path)
			isDir := err == nil && fi.IsDir()
			now = append(now, map[string]any{"path": c.path, "directory": isDir})
			if !isDir {
				changed = append(changed, c.path+" is not a directory now (this call made it one)")
			}
			continue
		}
		fs, _, err := p.ws.Current(c.path)
		if errors.Is(err, editguard.ErrNotFound) {
			fs, err = editguard.FileState{}, nil // a parent is gone
		}
		state := map[string]any{"path": c.path, "exists": fs.Exists}
		if fs.Exists {
			state["sha256"], state["size_bytes"] = fs.SHA256, fs.Size
		}
		now = append(now, state)
		var why string
		switch {
		case err != nil:
			why = fmt.Sprintf("%s could not be checked (%v)", c.path, err)
		case c.gone && fs.Exists:
			why = fmt.Sprintf("%s exists now, %d bytes, sha256 %s (this call removed it)", c.path, fs.Size, fs.SHA256)
		case c.gone:
		case !fs.Exists:
			why = fmt.Sprintf("%s does not exist now (this call left it with sha256 %s)", c.path, c.sha256)
		case fs.SHA256 != c.sha256:
			why = fmt.Sprintf("%s now holds sha256 %s, %d bytes (this call left it with sha256 %s)", c.path, fs.SHA256, fs.Size, c.sha256)
		}
		if why != "" {
			changed = append(changed, why)
		}
	}
	return changed, now
}

// copy returns e's result with a _meta of its own, which the SDK may add
// to while e is read by others; replayed marks it MetaReplayed.
func (e *replayEntry) copy(replayed bool) *mcp.CallToolResult {
	c := *e.res
	c.Meta = maps.Clone(c.Meta)
	if replayed {
		if c.Meta == nil {
			c.Meta = mcp.Meta{}
		}
		c.Meta[MetaReplayed] = true
	}
	return &c
}

// evict forgets the entries past their time, then the oldest beyond
// max - 1, making room for one more.
func (p *replay) evict(now time.Time) {
	p.order = slices.DeleteFunc(p.order, func(e *replayEntry) bool {
		if now.Before(e.until) {
			return false
		}
		if p.byKey[e.key] == e {
			delete(p.byKey, e.key)
		}
		return true
	})
	if n := len(p.order) - max(p.max, 1) + 1; n > 0 {
		for _, e := range p.order[:n] {
			if p.byKey[e.key] == e {
				delete(p.byKey, e.key)
			}
		}
		p.order = slices.Delete(p.order, 0, n)
	}
}

func (p *replay) remove(e *replayEntry) {
	if p.byKey[e.key] == e {
		delete(p.byKey, e.key)
	}
	if i := slices.Index(p.order, e); i >= 0 {
		p.order = slices.Delete(p.order, i, i+1)
	}
}
