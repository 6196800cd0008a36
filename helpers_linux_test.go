package editguard_test

import "github.com/editguard/editguard/internal/testutil"

// Helpers these tests share with those of internal/durability.
var (
	checkHistoryRestorable = testutil.CheckHistoryRestorable
	checkNoSharedObjects   = testutil.CheckNoSharedObjects
	needLeases             = testutil.NeedLeases
	heldContent            = testutil.HeldContent
	fdPath                 = testutil.FDPath
	tracedWriteOf          = testutil.TracedWriteOf
	traceWrite             = testutil.TraceWrite
)

const (
	tracedEnv = testutil.TracedEnv
	tracedOld = testutil.TracedOld
	tracedNew = testutil.TracedNew
)
