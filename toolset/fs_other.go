//go:build !unix

package toolset

// openNonblock is zero where opens do not block on special files.
const openNonblock = 0
