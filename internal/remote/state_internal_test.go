package remote

import (
	"encoding/json"
	"reflect"
	"testing"
)

// The sync state keeps every path exactly, whatever its bytes: JSON object
// keys are Unicode, so one that is not UTF-8 is stored under its hex.
func TestBranchSyncKeepsNamesExactly(t *testing.T) {
	b := &branchSync{Remote: "origin", Branch: "main", Base: "abc",
		Files:     map[string]syncedFile{"a.txt": {Exists: true, SHA256: "11"}, "caf\xe9.txt": {Exists: true, SHA256: "22"}, "x\xff\n": {}},
		Published: map[string]uint64{"a.txt": 1, "caf\xe9.txt": 2},
	}
	data, err := json.Marshal(&syncState{Branches: []*branchSync{b}})
	if err != nil {
		t.Fatal(err)
	}
	var back syncState
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Branches) != 1 || !reflect.DeepEqual(back.Branches[0], b) {
		t.Fatalf("round trip:\n%+v\nwant\n%+v\n(stored %s)", back.Branches[0], b, data)
	}
	// A state of UTF-8 names only is stored as it always was.
	plain := &branchSync{Remote: "origin", Branch: "main", Files: map[string]syncedFile{"a.txt": {Exists: true, SHA256: "11"}}}
	data, _ = json.Marshal(plain)
	if want := `{"remote":"origin","branch":"main","files":{"a.txt":{"exists":true,"sha256":"11"}}}`; string(data) != want {
		t.Fatalf("stored %s, want %s", data, want)
	}
	var bad branchSync
	if err := json.Unmarshal([]byte(`{"files_hex":{"612e747874":{}}}`), &bad); err == nil {
		t.Fatal("hex of a UTF-8 name was taken")
	}
}
