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
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return errUnauthenticated()
	}
	if s.opts.Auth == AuthToken && token != s.opts.Token {
		return errBadCredentials()
	}
	return nil
}
