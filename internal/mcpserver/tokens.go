package mcpserver

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"

	"github.com/editguard/editguard/internal/safeopen"
)

// Tokens maps bearer tokens to the agents that hold them. Only the
// SHA-256 digest of each token is kept. A Tokens is read-only once made
// and safe for concurrent use.
//
// The file format (see ParseTokens) is one agent per line:
//
//	# comment
//	alice  3f1c...64 hex digits...
//	ci-bot Zm9v...base64...
type Tokens struct {
	entries []tokenEntry
}

type tokenEntry struct {
	agent  string
	digest [sha256.Size]byte
}

// Token strength rules. editguard cannot measure randomness; it refuses
// tokens that are short or plainly not random ("changeme", "aaaa..."), so
// that a typo or a placeholder does not become the key to the workspace.
const (
	minTokenLen      = 32
	minTokenDistinct = 8
	maxTokenLen      = 512
)

// agentName is what an agent may be called: the name goes into the
// ledger's session field as AGENT/mcp-ID.
var agentName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$`) })

// tokenChars are the characters of an RFC 6750 b64token.
var tokenChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`) })

// LoadTokens reads the tokens file name with ParseTokens. Like ssh with a
// private key, it refuses a file that anyone but its owner can read or
// write, or that is owned by another user (other than root): the tokens
// are the keys to the workspace.
func LoadTokens(name string) (*Tokens, error) {
	// safeopen: a FIFO at name fails at once rather than waiting for a
	// writer, and anything but a regular file is refused.
	f, err := safeopen.Open(name)
	if err != nil {
		if errors.Is(err, safeopen.ErrNotRegular) {
			return nil, fmt.Errorf("tokens file %w", err)
		}
		return nil, err
	}
	defer f.Close()
	// fstat, not stat: the checks apply to the file that is read.
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("tokens file %s has permissions %#o: it must not be readable or writable by group or others (chmod 600 %s)", name, perm, name)
	}
	if err := checkOwner(name, fi); err != nil {
		return nil, err
	}
	t, err := ParseTokens(f)
	if err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", name, err)
	}
	return t, nil
}

// ParseTokens reads lines "AGENT TOKEN" (separated by spaces or tabs).
// Blank lines and lines starting with # are ignored. An agent name is 1 to
// 32 letters, digits, '.', '_' or '-', starting with a letter or digit; a
// token is 32 to 512 characters of A-Z a-z 0-9 - . _ ~ + / (then optional
// '=' padding) with at least 8 different ones, as "openssl rand -hex 32"
// makes. Each agent and each token may appear once. The errors name the
// line, never the token.
func ParseTokens(r io.Reader) (*Tokens, error) {
	t := &Tokens{}
	agents := map[string]int{}
	digests := map[[sha256.Size]byte]int{}
	sc := bufio.NewScanner(r)
	sc.Buffer(nil, 64<<10)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) != 2 {
			return nil, fmt.Errorf("line %d: want \"AGENT TOKEN\", got %d fields", n, len(f))
		}
		agent, token := f[0], f[1]
		if !agentName().MatchString(agent) {
			return nil, fmt.Errorf("line %d: bad agent name %q: use 1 to 32 letters, digits, '.', '_' or '-'", n, agent)
		}
		if err := checkTokenStrength(token); err != nil {
			return nil, fmt.Errorf("line %d (agent %s): %w", n, agent, err)
		}
		if prev, ok := agents[agent]; ok {
			return nil, fmt.Errorf("line %d: agent %s already has a token on line %d", n, agent, prev)
		}
		d := sha256.Sum256([]byte(token))
		if prev, ok := digests[d]; ok {
			return nil, fmt.Errorf("line %d (agent %s): the same token as line %d; give every agent its own", n, agent, prev)
		}
		agents[agent], digests[d] = n, n
		t.entries = append(t.entries, tokenEntry{agent: agent, digest: d})
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("line %d: too long", n+1)
		}
		return nil, err
	}
	if len(t.entries) == 0 {
		return nil, errors.New("no tokens (want lines \"AGENT TOKEN\")")
	}
	return t, nil
}

func checkTokenStrength(token string) error {
	if len(token) < minTokenLen || len(token) > maxTokenLen {
		return fmt.Errorf("token of %d characters: want %d to %d (make one with: openssl rand -hex 32)", len(token), minTokenLen, maxTokenLen)
	}
	if !tokenChars().MatchString(token) {
		return errors.New("token has characters other than A-Z a-z 0-9 - . _ ~ + / and trailing =")
	}
	seen := map[rune]bool{}
	for _, c := range token {
		seen[c] = true
	}
	if len(seen) < minTokenDistinct {
		return fmt.Errorf("token uses only %d different characters: it does not look random (make one with: openssl rand -hex 32)", len(seen))
	}
	return nil
}

// singleToken returns Tokens holding token alone, for an unnamed agent:
// its sessions keep their plain names (mcp-ID). It does not check the
// token's strength (HTTPOptions.Token).
func singleToken(token string) *Tokens {
	return &Tokens{entries: []tokenEntry{{digest: sha256.Sum256([]byte(token))}}}
}

// Agents returns the agents' names in file order.
func (t *Tokens) Agents() []string {
	var names []string
	for _, e := range t.entries {
		names = append(names, e.agent)
	}
	return names
}

// lookup returns the index of the entry whose token is the bearer token
// of the Authorization header value h, or -1. Its time does not depend on
// which entry matches or how much of a token is right: it compares the
// digest of what was sent with every entry's digest.
func (t *Tokens) lookup(h string) int {
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return -1
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.ContainsAny(token, " \t") {
		return -1
	}
	d := sha256.Sum256([]byte(token))
	found := -1
	for i := range t.entries {
		eq := subtle.ConstantTimeCompare(d[:], t.entries[i].digest[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	return found
}
