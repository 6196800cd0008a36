package soak

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// server is a running "editguard serve --http" process.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan error

	mu  sync.Mutex
	log bytes.Buffer // its standard error after the startup line
}

// startServer starts editguard serve on a free loopback port and waits for
// the line that names the address.
func startServer(ctx context.Context, bin, root string) (*server, error) {
	cmd := exec.Command(bin, "--root", root, "serve", "--http", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("soak: start server: %w", err)
	}
	s := &server{cmd: cmd, done: make(chan error, 1)}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if _, rest, ok := strings.Cut(line, "serving MCP on "); ok {
				url, _, _ := strings.Cut(rest, " ")
				select {
				case found <- url:
					continue
				default:
				}
			}
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
		}
		io.Copy(io.Discard, stderr)
		s.done <- cmd.Wait()
	}()
	select {
	case s.url = <-found:
		return s, nil
	case err := <-s.done:
		return nil, fmt.Errorf("soak: server exited before serving: %v: %s", err, s.stderr())
	case <-time.After(30 * time.Second):
		s.kill()
		return nil, fmt.Errorf("soak: server did not start within 30s: %s", s.stderr())
	case <-ctx.Done():
		s.kill()
		return nil, ctx.Err()
	}
}

func (s *server) stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

// stop asks the server to shut down (SIGTERM, as a service manager would)
// and waits for it. A server that does not exit cleanly is an error.
func (s *server) stop() (string, error) {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return s.stderr(), fmt.Errorf("signal: %v", err)
	}
	select {
	case err := <-s.done:
		s.done <- err // for kill
		if err != nil {
			return s.stderr(), fmt.Errorf("exited after SIGTERM: %v", err)
		}
		return s.stderr(), nil
	case <-time.After(30 * time.Second):
		s.kill()
		return s.stderr(), fmt.Errorf("did not exit within 30s of SIGTERM")
	}
}

// kill ends the server if it is still running.
func (s *server) kill() {
	select {
	case err := <-s.done:
		s.done <- err
	default:
		s.cmd.Process.Kill()
	}
}
