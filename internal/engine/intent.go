package engine

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/editguard/editguard/internal/ledger"
	"github.com/editguard/editguard/internal/userkey"
)

// A change's intent is in the ledger, durably, before the change is made,
// and its outcome record follows without waiting for its own fsync (see
// writeIntent). A power cut can therefore leave an intent without an
// outcome; so can a writer killed between the two. Open looks for such
// intents near the end of the ledger and appends their outcomes, judged
// from the file (resolveIntents, recover.go): "ok" if it holds what the
// intent said the change would leave, "interrupted" if not (reason
// "not_applied" if it holds what the change would have displaced,
// "unknown" if neither). Recovery acts only on an intent whose seal
// verifies: one this workspace wrote.

// IntentSeal is the MAC, under the workspace key, of what recovery reads
// from the intent r: its file, the contents it names and the bytes it
// carries.
func (e *Engine) IntentSeal(r *ledger.Record) string {
	return hex.EncodeToString(userkey.Derive(e.cfg.Key, "intent", sealFields(r)))
}

// sealed reports whether the intent r was written by this workspace: only
// then does recovery act on it.
func (e *Engine) sealed(r *ledger.Record) bool {
	return r.Seal != "" && hmac.Equal([]byte(r.Seal), []byte(e.IntentSeal(r)))
}

// sealFields are the fields of the intent r that its seal covers.
func sealFields(r *ledger.Record) []byte {
	var obs string
	if r.Observed != nil {
		obs = fmt.Sprintf("%t %s %d", r.Observed.Exists, r.Observed.SHA256, r.Observed.Size)
	}
	carried := sha256.Sum256(r.Displaced)
	b, _ := json.Marshal([]string{r.Tool, r.Session, r.Path, r.SHA256Before, r.SHA256After, obs,
		hex.EncodeToString(carried[:]), fmt.Sprint(r.DisplacedObject), r.Strategy})
	return b
}

// Intent is a change's first ledger record, written and fsynced before the
// change is made (see the ledger package, Intents). With it durable, the
// outcome record need not be durable before the change is reported: the
// commit waits for one fsync stage fewer.
type Intent struct {
	Rec   ledger.Record // Rec.Seq is cleared if the intent's write failed or was cut
	Seq   uint64        // Rec.Seq as written
	done  chan struct{} // closed when err is set
	err   error         // writing or fsyncing the intent failed
	p     *ledger.Pending
	start sync.Once
}

// begin starts the intent's fsync.
func (in *Intent) begin() {
	if in == nil {
		return
	}
	in.start.Do(func() {
		if in.p == nil {
			return
		}
		go func() {
			defer close(in.done)
			in.err = in.p.Wait()
		}()
	})
}

// writeIntent writes the intent of the change rec describes, which will
// leave content whose SHA-256 is after; the caller starts its fsync
// (Intent.begin) to run alongside
// the history's and the temporary file's. The caller holds the file's
// lock, so the intent is in the order of the file's changes. When the
// content the change displaces (obs) is small, the intent carries it; when
// it is over the history's inline limit and the history's objects are
// synced before each change (histSync.marked), it names the history
// object that will hold it. writeIntent reports whether the history may then save
// the version's line lazily (histsync.go): only when the intent was
// written and carries or names the content.
func (e *Engine) writeIntent(rec ledger.Record, after string, obs *Observation) (in *Intent, lazy bool) {
	in = &Intent{Rec: rec, done: make(chan struct{})}
	in.Rec.Outcome = ledger.OutcomePending
	in.Rec.SHA256After = after
	if obs.Stat.Exists && len(obs.Data) > 0 && len(obs.Data) <= carryLimit {
		in.Rec.Displaced = obs.Data
	}
	// Content over the history's inline limit goes to an object, made
	// durable before the change: the intent names it, and the version's
	// line can be lazy as a carried one's.
	marked := e.hsync.marked.Load()
	in.Rec.DisplacedObject = marked && obs.Stat.Exists && len(obs.Data) > max(carryLimit, e.cfg.Hist.InlineLimit())
	in.Rec.Seal = e.IntentSeal(&in.Rec)
	p, err := e.cfg.Led.Write(&in.Rec)
	if err != nil {
		in.err = err
		close(in.done)
		return in, false
	}
	in.Seq = in.Rec.Seq
	_, _, carries := carried(&in.Rec)
	in.p = p
	return in, marked && (carries || in.Rec.DisplacedObject)
}

// SavedIntent writes the intent of the change rec describes, which will
// leave after (a SHA-256, or "" for a removal), for a change whose
// displaced content is already durable in history: the intent carries no
// bytes. It starts the intent's fsync; Durable waits for it.
func (e *Engine) SavedIntent(rec ledger.Record, after string) *Intent {
	in := &Intent{Rec: rec, done: make(chan struct{})}
	in.Rec.Outcome = ledger.OutcomePending
	in.Rec.SHA256After = after
	in.Rec.Seal = e.IntentSeal(&in.Rec)
	p, err := e.cfg.Led.Write(&in.Rec)
	if err != nil {
		in.err = err
		close(in.done)
		return in
	}
	in.Seq, in.p = in.Rec.Seq, p
	in.begin()
	return in
}

// Durable waits for the intent's fsync and reports whether the intent is
// on stable storage; if it is not, the outcome record is made durable
// before the change is reported, as without an intent.
func (in *Intent) Durable() bool {
	if in == nil {
		return false
	}
	in.begin()
	<-in.done
	return in.err == nil
}

// Err is why the intent is not durable, once Durable has returned false.
func (in *Intent) Err() error { return in.err }
