package emulator

import (
	"net/http"
	"strings"
)

// authorize checks the bearer token the way the Google front end does before
// any API logic runs.
func (s *Server) authorize(r *http.Request) error {
	if s.opts.Auth == AuthAny {
		return nil
	}
	token := bearerToken(r)
	if token == "" {
		return errUnauthenticated()
	}
	if s.opts.Auth == AuthToken && token != s.opts.Token {
		return errBadCredentials()
	}
	return nil
}

// bearerToken returns the token of an "Authorization: Bearer" header, or ""
// when there is none.
func bearerToken(r *http.Request) string {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(token)
}
