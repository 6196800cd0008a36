//go:build unix

package history

import (
	"os"
	"path/filepath"
	"sync"

	"github.com/editguard/editguard/internal/statedir"
)

// storePaths maps a store opened by openAt to its directory's path, for
// tests that look at the files themselves.
var storePaths sync.Map

// openAt opens the store in the directory at path (created if needed)
// through statedir, as the workspace does.
func openAt(dir string, opts *Options) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return nil, err
	}
	parent, err := os.Open(filepath.Dir(dir))
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	d, err := statedir.Open(parent, "", filepath.Base(dir))
	if err != nil {
		return nil, err
	}
	// These tests look at objects: contents are inlined only where a
	// test asks for it.
	o := Options{InlineLimit: -1}
	if opts != nil {
		o = *opts
		if o.InlineLimit == 0 {
			o.InlineLimit = -1
		}
	}
	s, err := Open(d, &o)
	if err != nil {
		return nil, err
	}
	storePaths.Store(s, dir)
	return s, nil
}

func (s *Store) path() string {
	p, _ := storePaths.Load(s)
	return p.(string)
}

// objectPath is where s keeps path's object sum.
func (s *Store) objectPath(path, sum string) string {
	return filepath.Join(s.path(), "objects", pathKey(path), sum)
}

// indexPath is the path of p's index.
func (s *Store) indexPath(p string) string {
	return filepath.Join(s.path(), "index", indexName(p))
}

// syncDir fsyncs the directory at path.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
