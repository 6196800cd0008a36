package editguard

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/editguard/editguard/internal/ledger"
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

// intentSeal is the MAC, under the workspace key, of what recovery reads
// from the intent r: its file, the contents it names and the bytes it
// carries.
func (w *Workspace) intentSeal(r *LedgerRecord) string {
	return w.mac("intent", sealFields(r))
}

// sealed reports whether the intent r was written by this workspace: only
// then does recovery act on it.
func (w *Workspace) sealed(r *LedgerRecord) bool {
	return r.Seal != "" && w.macValid(r.Seal, "intent", sealFields(r))
}

func sealFields(r *LedgerRecord) []byte {
	var obs string
	if r.Observed != nil {
		obs = fmt.Sprintf("%t %s %d", r.Observed.Exists, r.Observed.SHA256, r.Observed.Size)
	}
	carried := sha256.Sum256(r.Displaced)
	b, _ := json.Marshal([]string{r.Tool, r.Session, r.Path, r.SHA256Before, r.SHA256After, obs,
		hex.EncodeToString(carried[:]), fmt.Sprint(r.DisplacedObject), r.Strategy})
	return b
}

// intent is a change's first ledger record, written and fsynced before the
// change is made (see the ledger package, Intents). With it durable, the
// outcome record need not be durable before the change is reported: the
// commit waits for one fsync stage fewer.
type intent struct {
	rec   ledger.Record
	seq   uint64        // rec.Seq as written (a failed fsync may clear rec.Seq)
	done  chan struct{} // closed when err is set
	err   error         // writing or fsyncing the intent failed
	p     *ledger.Pending
	start sync.Once
}

// begin starts the intent's fsync.
func (in *intent) begin() {
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

// writeIntent writes the intent of the change a describes, whose result
// will be res; the caller starts its fsync (intent.begin) to run alongside
// the history's and the temporary file's. The caller holds the file's
// lock, so the intent is in the order of the file's changes. When the
// content the change displaces (obs) is small, the intent carries it; when
// it is over the history's inline limit and the history's objects are
// synced before each change (hsync.marked), it names the history object
// that will hold it. writeIntent reports whether the history may then save
// the version's line lazily (histsync.go): only when the intent was
// written and carries or names the content.
func (w *Workspace) writeIntent(a *attempt, res *Result, obs *observation) (lazy bool) {
	in := &intent{rec: a.rec, done: make(chan struct{})}
	in.rec.Outcome = ledger.OutcomePending
	in.rec.SHA256After = res.SHA256
	if obs.Stat.Exists && len(obs.Data) > 0 && len(obs.Data) <= carryLimit {
		in.rec.Displaced = obs.Data
	}
	// Content over the history's inline limit goes to an object, made
	// durable before the change: the intent names it, and the version's
	// line can be lazy as a carried one's.
	marked := w.hsync.marked.Load()
	in.rec.DisplacedObject = marked && obs.Stat.Exists && len(obs.Data) > max(carryLimit, w.hist.InlineLimit())
	in.rec.Seal = w.intentSeal(&in.rec)
	a.intent = in
	p, err := w.led.Write(&in.rec)
	if err != nil {
		in.err = err
		close(in.done)
		return false
	}
	in.seq = in.rec.Seq
	_, _, carries := carried(&in.rec)
	in.p = p
	return marked && (carries || in.rec.DisplacedObject)
}

// savedIntent writes the intent of the change a describes, which will
// leave after (a SHA-256, or "" for a removal), for a change whose
// displaced content is already durable in history: the intent carries no
// bytes. It starts the intent's fsync; durable waits for it.
func (w *Workspace) savedIntent(a *attempt, after string) {
	in := &intent{rec: a.rec, done: make(chan struct{})}
	in.rec.Outcome = ledger.OutcomePending
	in.rec.SHA256After = after
	in.rec.Seal = w.intentSeal(&in.rec)
	a.intent = in
	p, err := w.led.Write(&in.rec)
	if err != nil {
		in.err = err
		close(in.done)
		return
	}
	in.seq, in.p = in.rec.Seq, p
	in.begin()
}

// durable waits for the intent's fsync and reports whether the intent is
// on stable storage; if it is not, the outcome record is made durable
// before the change is reported, as without an intent.
func (in *intent) durable() bool {
	if in == nil {
		return false
	}
	in.begin()
	<-in.done
	return in.err == nil
}
