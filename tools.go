//go:build tools

// This file pins modules that the module uses outside the root package, so
// that go mod tidy keeps them while packages that import them are built.
package editguard

import (
	_ "github.com/modelcontextprotocol/go-sdk/mcp"
	_ "github.com/rogpeppe/go-internal/testscript"
	_ "golang.org/x/sys/unix"
	_ "golang.org/x/text/encoding/htmlindex"
)
