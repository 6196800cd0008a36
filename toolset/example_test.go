package toolset_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/editguard/editguard"
	"github.com/editguard/editguard/toolset"
)

// An agent framework written in Go embeds the toolset without MCP: it puts
// Tools in the model's catalogue and sends each tool call to Execute. A
// failure is an *editguard.Error whose JSON the model reads to recover.
func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	os.WriteFile(filepath.Join(dir, "greet.go"), []byte("package greet\nconst Hello = \"hi\"\n"), 0o644)

	ws, err := editguard.Open(dir, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ws.Close()
	tools := toolset.New(ws.NewSession("agent-1"), nil)

	// The catalogue the framework sends to the model.
	for _, t := range tools.Tools() {
		fmt.Printf("%s readOnly=%v\n", t.Name, t.Annotations.ReadOnly)
	}

	// The model's tool calls, as the framework receives them.
	calls := []struct{ name, args string }{
		{"edit_file", `{"path":"greet.go","old_string":"\"hi\"","new_string":"\"hello\""}`},
		{"read_file", `{"path":"greet.go"}`},
		{"edit_file", `{"path":"greet.go","old_string":"\"hi\"","new_string":"\"hello\""}`},
	}
	for _, c := range calls {
		out, err := tools.Execute(context.Background(), c.name, json.RawMessage(c.args))
		var e *editguard.Error
		switch {
		case errors.As(err, &e):
			// Give the model the structured error; it says how to recover.
			fmt.Printf("%s failed: %s; hint: %s\n", c.name, e.Code, e.RecoveryHint)
		case err != nil:
			log.Fatal(err)
		case c.name == "read_file":
			fmt.Print(out.Text)
		default:
			// The summary line; out.Text goes on with the unified diff.
			fmt.Println(strings.SplitN(out.Text, "\n", 2)[0])
		}
	}
	// Output:
	// list_allowed_directories readOnly=true
	// read_file readOnly=true
	// read_multiple_files readOnly=true
	// list_directory readOnly=true
	// directory_tree readOnly=true
	// find_files readOnly=true
	// search_text readOnly=true
	// file_info readOnly=true
	// file_history readOnly=true
	// file_diff readOnly=true
	// edit_file readOnly=false
	// write_file readOnly=false
	// delete_file readOnly=false
	// apply_patch readOnly=false
	// undo_patch readOnly=false
	// move_file readOnly=false
	// create_directory readOnly=false
	// restore_file readOnly=false
	// begin_turn readOnly=false
	// begin_session readOnly=false
	// edit_file failed: NOT_READ; hint: call read_file on greet.go first, then redo the change
	// greet.go: all 2 lines, 33 bytes, sha256 60f3d77b94baccef143f5f5cee7e795202b779a9c0eb4062ad4a12fe0cda24db
	//      1	package greet
	//      2	const Hello = "hi"
	// Edited greet.go: +1 -1 lines in 1 hunk; now 36 bytes, sha256 3d2fcdd5d9c45c5d2c994ab9321e5d9f4ac2581d079efddca5b244ec43f8d151.
}
