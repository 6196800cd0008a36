package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// diskProbe measures, in dir, what the durable steps of a commit cost on
// this disk: the fsync of a new 4 KiB file, of a directory after a rename
// into it, and of a 200-byte append to a log. Each is the median of 50.
// editguard's edit performs several of these per call; server-filesystem
// performs none.
func diskProbe(dir string) (string, error) {
	d, err := os.MkdirTemp(dir, "disk-probe-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(d)
	log, err := os.OpenFile(filepath.Join(d, "log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return "", err
	}
	defer log.Close()
	dh, err := os.Open(d)
	if err != nil {
		return "", err
	}
	defer dh.Close()
	buf := make([]byte, 4096)
	var file, direc, appendSync []time.Duration
	for i := range 50 {
		p := filepath.Join(d, fmt.Sprintf("t%d", i))
		f, err := os.Create(p)
		if err != nil {
			return "", err
		}
		if _, err := f.Write(buf); err != nil {
			f.Close()
			return "", err
		}
		start := time.Now()
		err = f.Sync()
		file = append(file, time.Since(start))
		f.Close()
		if err != nil {
			return "", err
		}
		if err := os.Rename(p, filepath.Join(d, "target")); err != nil {
			return "", err
		}
		start = time.Now()
		if err := dh.Sync(); err != nil {
			return "", err
		}
		direc = append(direc, time.Since(start))
		if _, err := log.Write(buf[:200]); err != nil {
			return "", err
		}
		start = time.Now()
		if err := log.Sync(); err != nil {
			return "", err
		}
		appendSync = append(appendSync, time.Since(start))
	}
	return fmt.Sprintf("fsync of a new 4 KiB file %s, of a directory %s, of a 200-byte append %s (medians of 50)",
		ms(percentile(file, 0.5)), ms(percentile(direc, 0.5)), ms(percentile(appendSync, 0.5))), nil
}
