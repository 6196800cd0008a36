package replay

import (
	"encoding/json"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/internal/ledger"
)

// rules are how a tool's decision treats the file, as the engine's
// change does (commit.go).
type rules struct {
	wholeFile  bool // a whole-file write: a partial read is not enough
	overAbsent bool // a missing file needs no read
	noRead     bool // no read is needed at all (an append)
	merge      bool // a stale edit may merge over the other change
}

// Codes replay decides, as the engine names them.
const (
	codeStale    = string(editguard.CodeStaleFile)
	codeNotRead  = string(editguard.CodeNotRead)
	codeNotFound = string(editguard.CodeNotFound)
	codeNotAFile = string(editguard.CodeNotAFile)
	codeNoChange = string(editguard.CodeNoChange)
	codeInvalid  = string(editguard.CodeInvalidArgument)
)

// decide makes the decision of the engine's check step (the precondition,
// or the session's baseline, against the observation) from what rec holds.
// It returns the error code of a refusal, "" to proceed, or a skip.
func decide(rec *ledger.Record, ru rules) (string, *verdict) {
	obs := rec.Observed
	pre, err := precondition(rec)
	if err != nil {
		v := skipped(SkippedUnknown, "precondition does not decode")
		return "", &v
	}
	switch {
	case pre != nil:
		return explicit(pre, obs), nil
	case ru.overAbsent && !obs.Exists, ru.noRead:
		return "", nil
	case rec.Baseline == nil:
		switch {
		case unregular(rec):
			// Without a read, something that is not a regular
			// file is refused as such (the engine's check).
			return codeNotAFile, nil
		case obs.Exists:
			return codeNotRead, nil
		}
		return "", nil
	case !obs.Exists || obs.SHA256 != rec.Baseline.SHA256:
		switch {
		case ru.merge && obs.Exists && obs.SHA256 != "" && keptRead(rec.Baseline):
			return codeMerge, nil
		case ru.merge && rec.Outcome != "error" && merged(rec):
			v := skipped(SkippedMerged, "the content the session read is not recorded")
			return "", &v
		}
		return codeStale, nil
	case ru.wholeFile && rec.Baseline.Read != nil && !rec.Baseline.Read.Full:
		return codeNotRead, nil
	case ru.wholeFile && rec.Baseline.Read == nil && rec.ErrorCode == codeNotRead:
		// A record written before the read's extent was kept.
		v := skipped(SkippedReadExtent, rec.ErrorReason)
		return "", &v
	}
	return "", nil
}

// codeMerge is what decide returns for a stale edit that the engine would
// merge over the other writer's change, if the merge's rules allow: the
// read it is decided against is kept in history (keptRead).
const codeMerge = "merge"

// keptRead reports whether b, a record's baseline, names the history
// version that keeps the content the session read.
func keptRead(b *ledger.FileState) bool { return b.Read != nil && b.Read.Version != "" }

// merged reports whether rec's result says the edit was merged.
func merged(rec *ledger.Record) bool {
	var res struct {
		Merged bool `json:"merged"`
	}
	return json.Unmarshal(rec.Result, &res) == nil && res.Merged
}

// precondition returns rec's explicit precondition, or nil if it has none.
func precondition(rec *ledger.Record) (*editguard.Precondition, error) {
	if len(rec.Precondition) == 0 || string(rec.Precondition) == "null" {
		return nil, nil
	}
	p := &editguard.Precondition{}
	if err := json.Unmarshal(rec.Precondition, p); err != nil {
		return nil, err
	}
	if p.ExpectedSHA256 == "" && p.ExpectedMtimeMS == nil && p.ExpectedSizeBytes == nil && !p.RequireAll && !p.MustNotExist {
		return nil, nil
	}
	return p, nil
}

// explicit checks an explicit precondition against the observation, as
// the engine's checkExplicit does.
func explicit(p *editguard.Precondition, obs *ledger.FileState) string {
	switch {
	case malformed(p):
		return codeInvalid
	case p.MustNotExist && obs.Exists:
		return codeStale
	case p.MustNotExist:
		return ""
	case !obs.Exists || differs(p, obs):
		return codeStale
	}
	return ""
}

// malformed reports whether the engine refuses p as an argument.
func malformed(p *editguard.Precondition) bool {
	all := p.ExpectedSHA256 != "" && p.ExpectedMtimeMS != nil && p.ExpectedSizeBytes != nil
	some := p.ExpectedSHA256 != "" || p.ExpectedMtimeMS != nil || p.ExpectedSizeBytes != nil
	return p.ExpectedSHA256 != "" && !isHexSHA256(p.ExpectedSHA256) ||
		p.RequireAll && !all ||
		p.MustNotExist && some
}

// differs reports whether obs differs from what p expects.
func differs(p *editguard.Precondition, obs *ledger.FileState) bool {
	if p.ExpectedSHA256 != "" && obs.SHA256 != strings.ToLower(p.ExpectedSHA256) {
		return true
	}
	if p.ExpectedMtimeMS != nil && obs.MtimeMS != *p.ExpectedMtimeMS {
		return true
	}
	return p.ExpectedSizeBytes != nil && obs.Size != *p.ExpectedSizeBytes
}

func isHexSHA256(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// decodeArgs decodes rec's arguments into a, or returns a skip.
func decodeArgs(rec *ledger.Record, a any) *verdict {
	if err := json.Unmarshal(rec.Args, a); err != nil {
		v := skipped(SkippedUnknown, "arguments do not decode")
		return &v
	}
	return nil
}
