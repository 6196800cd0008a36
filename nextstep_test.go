package editguard_test

import (
	"encoding/json"
	"testing"

	"github.com/editguard/editguard"
)

// TestNextStep: every error code that has a next step gives it as a tool
// call on its path, in the error's JSON; the others give none.
func TestNextStep(t *testing.T) {
	for _, c := range []struct {
		code   editguard.Code
		path   string
		reason string
		want   string
	}{
		{editguard.CodeNotRead, "a.txt", "", `{"tool":"read_file","arguments":{"path":"a.txt"}}`},
		{editguard.CodeStaleFile, "a.txt", editguard.ReasonModified, `{"tool":"read_file","arguments":{"path":"a.txt"}}`},
		{editguard.CodeStaleFile, "a.txt", editguard.ReasonDeleted, `{"tool":"file_history","arguments":{"path":"a.txt"}}`},
		{editguard.CodeNoMatch, "a.txt", "", `{"tool":"read_file","arguments":{"path":"a.txt"}}`},
		{editguard.CodeAmbiguousMatch, "a.txt", "", `{"tool":"read_file","arguments":{"path":"a.txt"}}`},
		{editguard.CodeEncoding, "a.txt", "", `{"tool":"read_file","arguments":{"path":"a.txt"}}`},
		{editguard.CodeNotFound, "src/gone.go", "", `{"tool":"find_files","arguments":{"pattern":"gone.go"}}`},
		{editguard.CodeNotFound, "src/a[1].go", "", `{"tool":"list_directory","arguments":{"path":"src"}}`},
		{editguard.CodeNotAFile, "src", "", `{"tool":"list_directory","arguments":{"path":"src"}}`},
		{editguard.CodeRejected, "a.txt", "", ``},
		{editguard.CodePlaceholder, "a.txt", "", ``},
		{editguard.CodeBusy, "a.txt", "", ``},
		{editguard.CodeNotRead, "", "", ``}, // no path, no call
	} {
		e := &editguard.Error{Code: c.code, Message: "m", Details: map[string]any{}}
		if c.path != "" {
			e.Details["path"] = c.path
		}
		if c.reason != "" {
			e.Details["reason"] = c.reason
		}
		b, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			NextStep json.RawMessage `json:"next_step"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		want := ""
		if c.want != "" {
			var v any
			json.Unmarshal([]byte(c.want), &v)
			w, _ := json.Marshal(v)
			want = string(w)
		}
		var gv any
		json.Unmarshal(got.NextStep, &gv)
		gotNorm := ""
		if gv != nil {
			g, _ := json.Marshal(gv)
			gotNorm = string(g)
		}
		if gotNorm != want {
			t.Errorf("%s %s (%s): next_step %s, want %s", c.code, c.path, c.reason, got.NextStep, want)
		}
	}
}
