// Package durability holds the crash, power-loss and fault-injection
// suites of the commit protocol: processes killed with SIGKILL in the
// middle of writes, moves and patches (TestKill9*), every state a power
// cut can leave on the disk during a write, a held write or a patch and
// its undo (TestPowerLoss*, replayed from strace through
// internal/crashsim), and a failure injected into each step of a commit
// (*FaultAtEveryStep).
//
// The suites test the root package editguard from outside, like its own
// tests, and are a package of their own only because they are long: they
// take minutes under the race detector, and as a separate test binary
// they run in parallel with the root package's other tests instead of
// after them. They reach into a workspace through the internal/faults hooks
// that internal/testutil's Open passes in Options.Faults, and share their
// helpers with the root package's tests through
// internal/testutil. The package has no code but its tests.
package durability
