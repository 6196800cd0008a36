package main

import "runtime/debug"

// The garbage collector of serve. A server's live heap is small (sessions,
// baselines, the contents it remembers) and every call allocates its
// request, its result and their JSON, so at the runtime's default (a
// collection each time the heap doubles) collections run often and take a
// fifth of the server's CPU under load. serve lets the heap grow to five
// times what is live before collecting, and caps that growth with a soft
// limit, so that a large file in flight does not multiply the peak.
const (
	serverGCPercent   = 400
	serverMemoryLimit = 1 << 30
)

// serverGC sets serve's collector, unless GOGC or GOMEMLIMIT (read with
// getenv) says otherwise: the user's settings win.
func serverGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(serverGCPercent)
	}
	if getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(serverMemoryLimit)
	}
}
