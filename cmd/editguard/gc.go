package main

import "runtime/debug"

// The garbage collector of serve. A server's live heap is small (sessions,
// baselines, the contents it remembers) and every call allocates its
// request, its result and their JSON, so at the runtime's default (a
// collection each time the heap doubles) collections run often and take a
// fifth of the server's CPU under load. serve lets the heap grow to three
// times what is live before collecting, and caps that growth with a soft
// limit, so that a large file in flight does not multiply the peak. Five
// times (GOGC=400) committed no more under load, and made a lone 4 KiB
// read over stdio take 1.2 ms instead of 0.75 ms on the machine measured.
const (
	serverGCPercent   = 200
	serverMemoryLimit = 1 << 30
)

// The hook server's live heap is the checkpoints' base of every covered
// file (about 125 bytes a file, packed), and little else; what it
// allocates per event is small, but a checkpoint after git rewrote its
// index parses the index whole (about 50 bytes an entry, the file itself
// mapped, not read). At the runtime's default it held about three times
// its live heap; collecting at half again (GOGC=50) keeps its resident
// size near what it holds, for a collection every few events.
const hookServerGCPercent = 50

// hookServerGC sets the hook server's collector, unless GOGC says
// otherwise.
func hookServerGC(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(hookServerGCPercent)
	}
}

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
