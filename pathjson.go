package editguard

import (
	"encoding/json"

	"github.com/editguard/editguard/internal/rawpath"
)

// The results that name files carry, beside each path that is not UTF-8,
// its exact bytes in hex (internal/rawpath): JSON strings are Unicode, and
// a program reading --json or a tool's structured result would otherwise
// get a name with U+FFFD in place of the bytes, which names another file.
// A path that is UTF-8 adds nothing, so the JSON of every other result is
// what it was.

func (r Result) MarshalJSON() ([]byte, error) {
	type plain Result
	w := struct {
		plain
		PathHex      string `json:"path_hex,omitempty"`
		MovedFromHex string `json:"moved_from_hex,omitempty"`
	}{plain: plain(r)}
	w.Path, w.PathHex = rawpath.Split(r.Path)
	w.MovedFrom, w.MovedFromHex = rawpath.Split(r.MovedFrom)
	return json.Marshal(&w)
}

func (f PatchFile) MarshalJSON() ([]byte, error) {
	type plain PatchFile
	w := struct {
		plain
		PathHex    string `json:"path_hex,omitempty"`
		MovedToHex string `json:"moved_to_hex,omitempty"`
	}{plain: plain(f)}
	w.Path, w.PathHex = rawpath.Split(f.Path)
	w.MovedTo, w.MovedToHex = rawpath.Split(f.MovedTo)
	return json.Marshal(&w)
}

func (f RewindFile) MarshalJSON() ([]byte, error) {
	type plain RewindFile
	w := struct {
		plain
		PathHex string `json:"path_hex,omitempty"`
	}{plain: plain(f)}
	w.Path, w.PathHex = rawpath.Split(f.Path)
	return json.Marshal(&w)
}

func (f RewindRefusal) MarshalJSON() ([]byte, error) {
	type plain RewindRefusal
	w := struct {
		plain
		PathHex string `json:"path_hex,omitempty"`
	}{plain: plain(f)}
	w.Path, w.PathHex = rawpath.Split(f.Path)
	return json.Marshal(&w)
}

func (c CommandChange) MarshalJSON() ([]byte, error) {
	type plain CommandChange
	w := struct {
		plain
		PathHex string `json:"path_hex,omitempty"`
	}{plain: plain(c)}
	w.Path, w.PathHex = rawpath.Split(c.Path)
	return json.Marshal(&w)
}
