package gitobj

import (
	"crypto/rand"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkReadIndex reads an index of 20,000 entries, version 2.
func BenchmarkReadIndex(b *testing.B) {
	work := largeRepo(b)
	r := openRepo(b, filepath.Join(work, ".git"))
	b.ReportAllocs()
	for b.Loop() {
		ix, err := r.ReadIndex(1 << 30)
		if err != nil || ix.Len() != largeFiles {
			b.Fatal(err)
		}
	}
}

func BenchmarkLookup(b *testing.B) {
	work := largeRepo(b)
	ix, err := openRepo(b, filepath.Join(work, ".git")).ReadIndex(1 << 30)
	if err != nil {
		b.Fatal(err)
	}
	paths := make([]string, 1000)
	for i := range paths {
		paths[i] = largePath(i * 17)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := ix.Lookup(paths[i%len(paths)]); !ok {
			b.Fatal("not found")
		}
		i++
	}
}

// BenchmarkHas looks up ids in a pack of 20,000 objects, in 2,000 loose
// objects, and ids that are in neither.
func BenchmarkHas(b *testing.B) {
	dir := newGitDir(b)
	packed := make([]testObj, largeFiles)
	for i := range packed {
		packed[i] = blobObj(fmt.Sprintf("packed %d\n", i))
	}
	writePack(b, dir, packed, false)
	loose := make([]ID, 2000)
	for i := range loose {
		content := fmt.Sprintf("loose %d\n", i)
		loose[i] = BlobID([]byte(content))
		writeLoose(b, dir, loose[i], fmt.Appendf(nil, "blob %d\x00%s", len(content), content))
	}
	missing := make([]ID, 1000)
	for i := range missing {
		rand.Read(missing[i][:])
	}
	for _, bc := range []struct {
		name string
		ids  func(i int) ID
		want bool
	}{
		{"packed", func(i int) ID { return packed[i%len(packed)].id }, true},
		{"loose", func(i int) ID { return loose[i%len(loose)] }, true},
		{"missing", func(i int) ID { return missing[i%len(missing)] }, false},
	} {
		b.Run(bc.name, func(b *testing.B) {
			r := openRepo(b, dir)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if r.Has(bc.ids(i)) != bc.want {
					b.Fatal("wrong answer")
				}
				i++
			}
		})
	}
}

// BenchmarkReadBlob reads small blobs, packed and loose, and a blob at the
// end of a delta chain of 50.
func BenchmarkReadBlob(b *testing.B) {
	dir := newGitDir(b)
	small := blobObj("package p\n\n// A small file.\n")
	objs := []testObj{small}
	content := make([]byte, 64<<10)
	for i := range content {
		content[i] = 'a' + byte(i%26)
	}
	objs = append(objs, testObj{id: ID{0xfe}, typ: objBlob, data: content})
	for i := range 50 {
		content = append(content, byte('0'+i%10))
		o := testObj{id: ID{0xff, byte(i)}, typ: objOfsDelta, base: len(objs) - 1,
			data: makeDelta(len(content)-1, len(content), deltaCopy(0, uint32(len(content)-1)), []byte{1, content[len(content)-1]})}
		objs = append(objs, o)
	}
	objs[len(objs)-1].id = BlobID(content)
	writePack(b, dir, objs, false)
	looseData := "package p\n\n// A loose file.\n"
	looseID := BlobID([]byte(looseData))
	writeLoose(b, dir, looseID, fmt.Appendf(nil, "blob %d\x00%s", len(looseData), looseData))
	r := openRepo(b, dir)
	for _, bc := range []struct {
		name string
		id   ID
		size int
	}{
		{"packed", small.id, len(small.data)},
		{"loose", looseID, len(looseData)},
		{"chain50", BlobID(content), len(content)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(bc.size))
			var buf []byte
			for b.Loop() {
				var err error
				if buf, err = r.ReadBlob(bc.id, buf, 1<<20); err != nil || len(buf) != bc.size {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkBlobID(b *testing.B) {
	data := make([]byte, 1<<20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		BlobID(data)
	}
}
