package ui

import (
	"crypto/subtle"
	"net/http"
	"net/url"
)

// csp allows the page's own script, style and images and nothing else: no
// inline script, no other origin, no framing.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// guard wraps every route: security headers, the Host check, the token
// (from the URL, which sets the cookie, or from the cookie), and for a
// POST the same-origin check.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", csp)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		h.Set("Cross-Origin-Resource-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		if !loopbackHost(r.Host) {
			http.Error(w, "forbidden: this page answers only to a loopback address", http.StatusForbidden)
			return
		}
		if t := r.URL.Query().Get("t"); t != "" {
			s.enter(w, r, t)
			return
		}
		if !s.tokenOK(r) {
			http.Error(w, "forbidden: open the address editguard ui printed (it carries the token)", http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r) {
			http.Error(w, "forbidden: cross-origin request", http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// enter checks the token the URL carries, sets the cookie, and redirects
// to the same address without the token, so that it stays out of the
// browser's history and of every link.
func (s *Server) enter(w http.ResponseWriter, r *http.Request, t string) {
	if r.Method != http.MethodGet || !s.equalToken(t) {
		http.Error(w, "forbidden: wrong token", http.StatusForbidden)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookie, Value: s.token, Path: "/",
		HttpOnly: true, SameSite: http.SameSiteStrictMode})
	q := r.URL.Query()
	q.Del("t")
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

func (s *Server) tokenOK(r *http.Request) bool {
	c, err := r.Cookie(s.cookie)
	return err == nil && s.equalToken(c.Value)
}

func (s *Server) equalToken(t string) bool {
	return subtle.ConstantTimeCompare([]byte(t), []byte(s.token)) == 1
}

// sameOrigin reports whether a state-changing request comes from the
// page itself: its Origin is this server, or, without Origin (or with the
// opaque "null" some browsers send), the browser says the request is
// same-origin. A request with neither is refused.
func sameOrigin(r *http.Request) bool {
	if o := r.Header.Get("Origin"); o != "" && o != "null" {
		return o == "http://"+r.Host
	}
	return r.Header.Get("Sec-Fetch-Site") == "same-origin"
}
