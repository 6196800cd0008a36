package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/editguard/editguard/internal/safeopen"
)

// keepLocal makes sure that git does not offer to commit rel, a client's
// local settings file in the workspace root: rel names programs by this
// machine's paths and turns off the client's own tools, which a teammate
// without editguard needs. If nothing ignores rel yet, it is added to the
// repository's info/exclude, which stays in this clone. Outside a git work
// tree, or without git, there is nothing to do. It returns what it did or
// could not do, as notes for the person.
//
// git reads the repository's ignore files, and blocks for ever on a FIFO
// among them: the exclude file is looked at before git is asked, and each
// git command gets gitWait to answer.
func keepLocal(ctx context.Context, root, rel string, dryRun bool) []string {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, gitWait)
	defer cancel()
	noAnswer := fmt.Sprintf("could not ask git whether %s is ignored (git did not answer within %v: is one of the repository's ignore files a FIFO?): make sure it is not committed", rel, gitWait)
	out, err := exec.CommandContext(ctx, git, "-C", root, "rev-parse", "--show-prefix", "--git-path", "info/exclude").Output()
	var exit *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return []string{noAnswer}
	case errors.As(err, &exit):
		return nil // not in a git work tree
	case err != nil:
		return []string{fmt.Sprintf("could not ask git whether %s is ignored (%v): make sure it is not committed", rel, err)}
	}
	lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
	if len(lines) != 2 {
		return []string{fmt.Sprintf("%s is not ignored by git, and its exclude file could not be found: add %s to .gitignore or .git/info/exclude", rel, rel)}
	}
	pattern, exclude := "/"+lines[0]+rel, lines[1]
	if !filepath.IsAbs(exclude) {
		exclude = filepath.Join(root, exclude)
	}
	if f, err := safeopen.Open(exclude); err == nil {
		f.Close()
	} else if errors.Is(err, safeopen.ErrNotRegular) {
		return []string{fmt.Sprintf("could not ask git whether %s is ignored: %v, which git would wait on for ever: make it a file, and make sure %s is not committed", rel, err, rel)}
	}
	err = exec.CommandContext(ctx, git, "-C", root, "check-ignore", "-q", "--", rel).Run()
	switch {
	case err == nil:
		return nil // ignored already
	case ctx.Err() != nil:
		return []string{noAnswer}
	case !errors.As(err, &exit):
		return []string{fmt.Sprintf("could not ask git whether %s is ignored (%v): make sure it is not committed", rel, err)}
	case exit.ExitCode() != 1:
		return nil // not in a git work tree
	}
	if dryRun {
		return []string{fmt.Sprintf("would add %s to %s, so that git does not commit this clone's settings", pattern, exclude)}
	}
	if err := appendLine(exclude, pattern); err != nil {
		return []string{fmt.Sprintf("%s is not ignored by git, and adding it to %s failed (%v): add %s to .gitignore", rel, exclude, err, pattern)}
	}
	return []string{fmt.Sprintf("added %s to %s, so that git does not commit this clone's settings", pattern, exclude)}
}

// gitWait bounds each git command keepLocal runs.
const gitWait = 30 * time.Second

// appendLine adds line to the end of the file name, creating it and its
// directory if needed, on a line of its own. Anything at name but a
// regular file (a FIFO would block both the read and the open for
// writing) is refused, and nothing is written.
func appendLine(name, line string) error {
	old, err := safeopen.ReadFile(name, maxExclude)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		line = "\n" + line
	}
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE|syscall.O_NONBLOCK, 0o644)
	if err != nil {
		return err
	}
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &safeopen.NotRegularError{Path: name, Kind: safeopen.Kind(fi.Mode())}
		}
		return err
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// maxExclude bounds the exclude file appendLine reads.
const maxExclude = 16 << 20
