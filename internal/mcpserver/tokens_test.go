package mcpserver_test

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/editguard/editguard/internal/mcpserver"
)

// testToken returns a strong token, different for every i.
func testToken(i int) string {
	d := sha256.Sum256([]byte("editguard test token " + strconv.Itoa(i)))
	return hex.EncodeToString(d[:])
}

func parseTokens(t *testing.T, s string) *mcpserver.Tokens {
	t.Helper()
	tok, err := mcpserver.ParseTokens(strings.NewReader(s))
	if err != nil {
		t.Fatalf("ParseTokens(%q): %v", s, err)
	}
	return tok
}

// writeFile writes content to a new file in dir with mode perm (chmod, so
// that the umask does not matter) and returns its name.
func writeFile(t *testing.T, dir, name, content string, perm os.FileMode) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, perm); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestParseTokens(t *testing.T) {
	weak := "aaaaaaaabbbbbbbbaaaaaaaabbbbbbbbaaaa" // long enough, not random
	tests := []struct {
		name, file string
		agents     []string // nil: an error
	}{
		{"two agents", "alice " + testToken(1) + "\nbob\t" + testToken(2) + "\n", []string{"alice", "bob"}},
		{"comments and blanks", "# agents\n\n  alice   " + testToken(1) + "  \n  # bob is away\n", []string{"alice"}},
		{"base64 with padding", "ci-bot.1 Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo=\n", []string{"ci-bot.1"}},
		{"empty", "# nobody\n\n", nil},
		{"one field", testToken(1) + "\n", nil},
		{"three fields", "alice " + testToken(1) + " extra\n", nil},
		{"bad agent name", "al/ice " + testToken(1) + "\n", nil},
		{"agent name too long", strings.Repeat("a", 33) + " " + testToken(1) + "\n", nil},
		{"short token", "alice 0123456789abcdef\n", nil},
		{"token not random", "alice " + weak + "\n", nil},
		{"token with odd characters", "alice " + testToken(1)[:40] + "\"quoted\"\n", nil},
		{"duplicate agent", "alice " + testToken(1) + "\nalice " + testToken(2) + "\n", nil},
		{"duplicate token", "alice " + testToken(1) + "\nbob " + testToken(1) + "\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tok, err := mcpserver.ParseTokens(strings.NewReader(tt.file))
			if tt.agents == nil {
				if err == nil {
					t.Fatalf("ParseTokens(%q) = %v, want an error", tt.file, tok.Agents())
				}
				for _, secret := range []string{testToken(1), testToken(2), weak} {
					if strings.Contains(err.Error(), secret) {
						t.Errorf("error %q shows a token", err)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseTokens(%q): %v", tt.file, err)
			}
			if got := tok.Agents(); strings.Join(got, ",") != strings.Join(tt.agents, ",") {
				t.Errorf("Agents() = %q, want %q", got, tt.agents)
			}
		})
	}
}

// TestLoadTokensPermissions: like ssh with a key, a tokens file others may
// read or write is refused.
func TestLoadTokensPermissions(t *testing.T) {
	dir := t.TempDir()
	content := "alice " + testToken(1) + "\n"
	for _, perm := range []os.FileMode{0o600, 0o400} {
		p := writeFile(t, dir, fmt.Sprintf("ok-%o", perm), content, perm)
		if _, err := mcpserver.LoadTokens(p); err != nil {
			t.Errorf("LoadTokens(mode %#o) = %v, want ok", perm, err)
		}
	}
	for _, perm := range []os.FileMode{0o644, 0o640, 0o604, 0o620, 0o602, 0o660, 0o666} {
		p := writeFile(t, dir, fmt.Sprintf("bad-%o", perm), content, perm)
		_, err := mcpserver.LoadTokens(p)
		if err == nil {
			t.Errorf("LoadTokens(mode %#o) = ok, want a refusal", perm)
			continue
		}
		if !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("LoadTokens(mode %#o) = %v, want it to say how to fix it", perm, err)
		}
	}
	if _, err := mcpserver.LoadTokens(dir); err == nil {
		t.Errorf("LoadTokens(a directory) = ok, want an error")
	}
	if _, err := mcpserver.LoadTokens(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("LoadTokens(missing) = %v, want ErrNotExist", err)
	}
}
