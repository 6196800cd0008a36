package ui

import (
	"errors"
	"sync"
	"time"

	"github.com/editguard/editguard"
)

// verifyEvery is the shortest time between two verifications of the
// ledger's chain while records arrive.
const verifyEvery = 3 * time.Second

// reverifyEvery is how often the chain is verified again when no record
// arrived: an edit of the file that appends nothing is found too.
const reverifyEvery = 30 * time.Second

// trustStatus is the ledger's chain status as the header shows it.
type trustStatus struct {
	Checked bool // a verification has finished
	OK      bool
	Records int
	BadSeq  uint64 // the first record that fails, when not OK
	BadLine int
	Reason  string
	At      time.Time
}

// verifier verifies the ledger's hash chain in the background, again
// when new records arrived, and keeps the last status.
type verifier struct {
	w      Reader
	mu     sync.Mutex
	status trustStatus
	seq    uint64 // the newest seq when the last verification began
	kick   chan uint64
	stop   chan struct{}
	once   sync.Once
	done   chan struct{}
}

func newVerifier(w Reader) *verifier {
	v := &verifier{w: w, kick: make(chan uint64, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go v.run()
	return v
}

// update asks for a verification if the ledger's newest record is not the
// one the last verification saw.
func (v *verifier) update(newest uint64) {
	select {
	case v.kick <- newest:
	default:
	}
}

func (v *verifier) run() {
	defer close(v.done)
	for {
		select {
		case <-v.stop:
			return
		case newest := <-v.kick:
			v.mu.Lock()
			same := v.status.Checked && newest == v.seq && time.Since(v.status.At) < reverifyEvery
			v.mu.Unlock()
			if !same {
				start := time.Now()
				v.verify(newest)
				v.pause(max(verifyEvery, 5*time.Since(start)))
			}
		}
	}
}

// pause waits d, or until the verifier stops. The caller makes d five
// times what the verification took, so that a long ledger under a steady
// stream of changes costs at most a fifth of a processor.
func (v *verifier) pause(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-v.stop:
	case <-t.C:
	}
}

func (v *verifier) verify(newest uint64) {
	n, err := v.w.VerifyLedger()
	st := trustStatus{Checked: true, OK: err == nil, Records: n, At: time.Now()}
	var ve *editguard.LedgerVerifyError
	switch {
	case errors.As(err, &ve):
		st.BadSeq, st.BadLine, st.Reason = ve.Seq, ve.Line, ve.Reason
	case err != nil:
		st.Reason = err.Error()
	}
	v.mu.Lock()
	v.status, v.seq = st, newest
	v.mu.Unlock()
}

// get returns the last status.
func (v *verifier) get() trustStatus {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.status
}

func (v *verifier) close() {
	v.once.Do(func() { close(v.stop) })
	<-v.done
}
