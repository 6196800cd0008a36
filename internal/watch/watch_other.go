//go:build !linux

package watch

import "errors"

// Options configure a Watcher.
type Options struct {
	Watch   func(rel string) bool
	SyncDir string
	Fault   func(rel string) error
	Hold    chan struct{}
}

// Change is a path that changed since a mark.
type Change struct {
	Path    string
	Created bool
}

// A Watcher is a change journal; only Linux has one.
type Watcher struct{}

// New fails: only Linux has a watcher.
func New(root string, opts Options) (*Watcher, error) {
	return nil, errors.New("watch: no change journal on this system")
}

func (w *Watcher) Add(rel string) error                    { return errors.New("watch: unsupported") }
func (w *Watcher) Ready()                                  {}
func (w *Watcher) Watched() int                            { return 0 }
func (w *Watcher) Err() error                              { return errors.New("watch: unsupported") }
func (w *Watcher) Inject(err error)                        {}
func (w *Watcher) Close() error                            { return nil }
func (w *Watcher) Since(m uint64) ([]Change, uint64, bool) { return nil, 0, false }
