package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// keepLocal makes sure that git does not offer to commit rel, a client's
// local settings file in the workspace root: rel names programs by this
// machine's paths and turns off the client's own tools, which a teammate
// without editguard needs. If nothing ignores rel yet, it is added to the
// repository's info/exclude, which stays in this clone. Outside a git work
// tree, or without git, there is nothing to do. It returns what it did or
// could not do, as notes for the person.
func keepLocal(ctx context.Context, root, rel string, dryRun bool) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	err = exec.CommandContext(ctx, git, "-C", root, "check-ignore", "-q", "--", rel).Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil // ignored already
	case !errors.As(err, &exit):
		return []string{fmt.Sprintf("could not ask git whether %s is ignored (%v): make sure it is not committed", rel, err)}
	case exit.ExitCode() != 1:
		return nil // not in a git work tree
	}
	out, err := exec.CommandContext(ctx, git, "-C", root, "rev-parse", "--show-prefix", "--git-path", "info/exclude").Output()
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if err != nil || len(lines) != 2 {
		return []string{fmt.Sprintf("%s is not ignored by git, and its exclude file could not be found: add %s to .gitignore or .git/info/exclude", rel, rel)}
	}
	pattern, exclude := "/"+lines[0]+rel, lines[1]
	if !filepath.IsAbs(exclude) {
		exclude = filepath.Join(root, exclude)
	}
	if dryRun {
		return []string{fmt.Sprintf("would add %s to %s, so that git does not commit this clone's settings", pattern, exclude)}
	}
	if err := appendLine(exclude, pattern); err != nil {
		return []string{fmt.Sprintf("%s is not ignored by git, and adding it to %s failed (%v): add %s to .gitignore", rel, exclude, err, pattern)}
	}
	return []string{fmt.Sprintf("added %s to %s, so that git does not commit this clone's settings", pattern, exclude)}
}

// appendLine adds line to the end of the file name, creating it and its
// directory if needed, on a line of its own.
func appendLine(name, line string) error {
	old, err := os.ReadFile(name)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		line = "\n" + line
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
