package soak

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
)

// cliClient drives the editguard command line, one process per call, with
// a persistent session of its own: the read baseline survives from the
// read process to the edit process in the session's state file.
type cliClient struct {
	bin, root, session string
}

// run runs one editguard command with --json and decodes its output into
// out, or into a refusal when the command fails with a structured error.
// Exit code 3 is a conflict (NOT_READ, STALE_FILE); other failures with a
// structured error are refusals of another code, which the verification
// judges; anything else is a failure of the call.
func (c *cliClient) run(ctx context.Context, out any, args ...string) (*toolError, error) {
	argv := append([]string{"--root", c.root, "--session", c.session}, args...)
	cmd := exec.CommandContext(ctx, c.bin, argv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		return nil, fmt.Errorf("editguard %v: %v", args, err)
	}
	if err != nil {
		var fail struct {
			Error *toolError `json:"error"`
		}
		if jerr := json.Unmarshal(stdout.Bytes(), &fail); jerr != nil || fail.Error == nil || fail.Error.Code == "" {
			return nil, fmt.Errorf("editguard %v: %v: %s", args, err, bytes.TrimSpace(stderr.Bytes()))
		}
		if code := exit.ExitCode(); (code == 3) != (fail.Error.Code == "STALE_FILE" || fail.Error.Code == "NOT_READ") {
			return nil, fmt.Errorf("editguard %v: exit code %d with error code %s", args, code, fail.Error.Code)
		}
		return fail.Error, nil
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		return nil, fmt.Errorf("editguard %v: decode output: %v", args, err)
	}
	return nil, nil
}

func (c *cliClient) read(ctx context.Context, file string) (string, *toolError, error) {
	var r struct {
		Content   *string `json:"content"`
		Truncated bool    `json:"truncated"`
	}
	terr, err := c.run(ctx, &r, "read", "--json", file)
	if err != nil || terr != nil {
		return "", terr, err
	}
	if r.Content == nil || r.Truncated {
		return "", nil, fmt.Errorf("editguard read %s: no whole content in the output", file)
	}
	return *r.Content, nil, nil
}

func (c *cliClient) appendMarker(ctx context.Context, file, marker string) (*toolError, error) {
	var r struct {
		SHA256 string `json:"sha256"`
	}
	terr, err := c.run(ctx, &r, "edit", "--json", "--yes", "--old", endLine, "--new", marker+"\n"+endLine, file)
	if err == nil && terr == nil && r.SHA256 == "" {
		return nil, fmt.Errorf("editguard edit %s: success without a sha256", file)
	}
	return terr, err
}

func (c *cliClient) close() error { return nil }
