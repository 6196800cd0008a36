package mounts

import (
	"reflect"
	"testing"
)

func TestParse(t *testing.T) {
	table := `22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/vda rw
40 22 0:5 / /work/root/a rw - tmpfs tmpfs rw
41 22 0:6 / /work/root2/b rw - tmpfs tmpfs rw
42 40 0:7 / /work/root/a/with\040space rw - tmpfs tmpfs rw
43 22 0:8 / /work/root rw - tmpfs tmpfs rw
bad line
`
	got := parse(table, "/work/root")
	want := []Mount{{40, "/work/root/a"}, {42, "/work/root/a/with space"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("parse = %v, want %v", got, want)
	}
	if Signature(got) == Signature(got[:1]) || Signature(nil) != "" {
		t.Fatal("the signature does not follow the mounts")
	}
	if s := Signature([]Mount{{44, "/work/root/a"}, {42, "/work/root/a/with space"}}); s == Signature(got) {
		t.Fatal("a mount made again has the same signature")
	}
}
