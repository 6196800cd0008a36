package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestServerGC checks that serve's collector settings apply only where
// the user set neither GOGC nor GOMEMLIMIT.
func TestServerGC(t *testing.T) {
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() {
		debug.SetGCPercent(percent)
		debug.SetMemoryLimit(limit)
	}()
	serverGC(func(string) string { return "" })
	if got := debug.SetGCPercent(100); got != serverGCPercent {
		t.Errorf("GC percent = %d, want %d", got, serverGCPercent)
	}
	if got := debug.SetMemoryLimit(math.MaxInt64); got != serverMemoryLimit {
		t.Errorf("memory limit = %d, want %d", got, serverMemoryLimit)
	}
	serverGC(func(k string) string { return map[string]string{"GOGC": "50", "GOMEMLIMIT": "2GiB"}[k] })
	if got := debug.SetGCPercent(100); got != 100 {
		t.Errorf("GC percent with GOGC set = %d, want it left at 100", got)
	}
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("memory limit with GOMEMLIMIT set = %d, want it left alone", got)
	}
}
