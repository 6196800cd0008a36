package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
)

var versionCmd = &command{
	name:    "version",
	args:    "[--json]",
	summary: "print editguard's version",
	help: `Version prints editguard's version: the module version it was installed
at ("go install ...@v1.2.3", or a release built at tag v1.2.3); for a build
from a clone, the version Go derives from the commit
("v0.0.0-20260101120000-0123456789ab", "+dirty" if the work tree had
changes), or "devel" with the commit ("devel+0123456789ab") when Go
recorded no version (-buildvcs=false). The MCP server reports the same
version to its clients. With --json it prints {version, go, os, arch}.`,
}

func runVersion(ctx context.Context, e *env, args []string) error {
	fs := newFlagSet(versionCmd.name)
	fs.BoolVar(&e.json, "json", e.json, "print the version as JSON")
	pos, err := parseCommand(e, versionCmd, fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef(versionCmd.name, "version takes no arguments, got %q", pos)
	}
	if e.json {
		return e.printJSON(map[string]string{"version": version(), "go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
	}
	return printVersion(e)
}

// printVersion prints the version line of "editguard version" and
// "editguard --version".
func printVersion(e *env) error {
	_, err := fmt.Fprintf(e.stdout, "editguard %s (%s %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}

// version returns editguard's version from the build information: the main
// module's version, which Go records for an install at a version and, from
// git, for a build in a clone (a pseudo-version there); else "devel",
// followed by the commit ("devel+0123456789ab") and "+dirty" when the
// build recorded them.
func version() string {
	bi, ok := readBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
}

// readBuildInfo is debug.ReadBuildInfo, replaced in tests.
var readBuildInfo = debug.ReadBuildInfo

func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		v += "+" + rev[:min(12, len(rev))]
		if modified {
			v += "+dirty"
		}
	}
	return v
}
