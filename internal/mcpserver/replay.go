package mcpserver

import (
	"context"
	"crypto/sha256"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/editguard/editguard"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A call that changes files may reach the server twice: a client that
// lost the answer (a dropped connection, a timeout) sends it again. It
// must not apply twice, nor fail the second time with STALE_FILE against
// its own first write. A session remembers the results of such calls by
// the call's idempotency key (MetaIdempotencyKey in the request's _meta),
// else by its JSON-RPC request id, and answers a call it has seen, with
// the same tool and arguments, with the first result, without running it
// again. A call that arrives while its first is running waits for it.
//
// Only successes are remembered: a call that failed changed nothing, and
// runs again when it comes again. A JSON-RPC id names a call for a short
// while only (rpcIDAge): in 2026-07-28 one session serves every client of
// a token, and a client that starts again numbers its requests from the
// start again.

// MetaIdempotencyKey is the key of a tool call's _meta that names the
// call: calls of one session with the same key are one call.
const MetaIdempotencyKey = "editguard/idempotency_key"

// MetaReplayed marks, in a result's _meta, the answer to a call made
// again: the change was made once, by the first call.
const MetaReplayed = "editguard/replayed"

// rpcIDHeader carries the JSON-RPC id of an HTTP request's call from the
// endpoint to the tool handler (see eraRouter); a client's own is dropped.
const rpcIDHeader = "Editguard-Jsonrpc-Id"

// rpcIDAge bounds the age of a result remembered by JSON-RPC id; one
// remembered by idempotency key is kept for the replay's age.
const rpcIDAge = 2 * time.Minute

// replayKey names a call for replay: by idempotency key (explicit) or
// JSON-RPC id.
type replayKey struct {
	name     string
	explicit bool
}

func replayKeyOf(req *mcp.CallToolRequest) replayKey {
	if k, ok := req.Params.Meta[MetaIdempotencyKey].(string); ok && k != "" {
		return replayKey{name: "key:" + k, explicit: true}
	}
	if req.Extra != nil && req.Extra.Header != nil {
		if id := req.Extra.Header.Get(rpcIDHeader); id != "" {
			return replayKey{name: "rpc:" + id}
		}
	}
	return replayKey{}
}

// replay is the results a session remembers, at most max of them and
// none older than age. It is safe for concurrent use.
type replay struct {
	max int
	age time.Duration

	mu    sync.Mutex
	byKey map[string]*replayEntry
	order []*replayEntry // oldest first
}

type replayEntry struct {
	key    string
	digest [sha256.Size]byte // of the tool and its arguments
	until  time.Time         // forgotten then
	done   chan struct{}     // closed when res is set
	res    *mcp.CallToolResult
}

func newReplay(max int, age time.Duration) *replay {
	return &replay{max: max, age: age, byKey: map[string]*replayEntry{}}
}

// do runs run, unless the call named k was seen with the same tool and
// arguments: then it returns the first call's result. An idempotency key
// seen with other arguments is INVALID_ARGUMENT; a JSON-RPC id seen with
// other arguments names a new call. A failure is not remembered, nor a
// result that asks for input (input_required): the call comes again with
// the answer.
func (p *replay) do(ctx context.Context, k replayKey, tool string, args []byte, run func() *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if k.name == "" {
		return run(), nil
	}
	h := sha256.New()
	h.Write([]byte(tool))
	h.Write([]byte{0})
	h.Write(args)
	now := time.Now()
	e := &replayEntry{key: k.name, until: now.Add(p.age), done: make(chan struct{})}
	if !k.explicit {
		e.until = now.Add(min(p.age, rpcIDAge))
	}
	h.Sum(e.digest[:0])
	p.mu.Lock()
	p.evict(now)
	if seen := p.byKey[k.name]; seen != nil {
		if seen.digest == e.digest {
			p.mu.Unlock()
			return seen.answer(ctx)
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

	e.res = run()
	if e.res.IsError || e.res.InputRequests != nil {
		p.mu.Lock()
		p.remove(e)
		p.mu.Unlock()
	}
	close(e.done)
	return e.copy(false), nil
}

// answer waits for e's result and returns a copy marked MetaReplayed.
func (e *replayEntry) answer(ctx context.Context) (*mcp.CallToolResult, error) {
	select {
	case <-e.done:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return e.copy(e.res.InputRequests == nil), nil
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
