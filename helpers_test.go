package editguard_test

import "github.com/editguard/editguard/internal/testutil"

// Helpers these tests share with those of internal/durability.
var (
	newWorkspace   = testutil.NewWorkspace
	writeFile      = testutil.WriteFile
	readFile       = testutil.ReadFile
	sha256hex      = testutil.SHA256Hex
	ledgerRecords  = testutil.LedgerRecords
	assertNoTemp   = testutil.AssertNoTemp
	startWorker    = testutil.StartWorker
	applyWorkspace = testutil.ApplyWorkspace
	tree           = testutil.Tree
	journals       = testutil.Journals
	applyAfter     = testutil.ApplyAfter
)

const applyPatchText = testutil.ApplyPatchText
