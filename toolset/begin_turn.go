package toolset

import (
	"context"
	"encoding/json"
)

var beginTurnTool = &toolDef{
	name: "begin_turn", title: "Begin turn",
	description: beginTurnDescription,
	input: `{
  "type": "object",
  "properties": {},
  "additionalProperties": false
}`,
	output: `{
  "type": "object",
  "properties": {"cleared": {"type": "boolean"}},
  "required": ["cleared"]
}`,
	annotations: Annotations{Idempotent: true},
	run:         (*Toolset).beginTurn,
}

const beginTurnDescription = `Forget every file read so far in this session. After it, each existing file must be read again before it is changed. Call it at the start of a new task when files may have changed while you were not looking.`

// TurnResult is begin_turn's result.
type TurnResult struct {
	Cleared bool `json:"cleared"`
}

func (t *Toolset) beginTurn(ctx context.Context, raw json.RawMessage) (*Output, error) {
	var a struct{}
	if err := decodeArgs("begin_turn", raw, &a); err != nil {
		return nil, err
	}
	if err := t.s.BeginTurn(); err != nil {
		return nil, err
	}
	return &Output{Structured: &TurnResult{Cleared: true}, Text: "Forgot all earlier reads: read each file again before changing it."}, nil
}
