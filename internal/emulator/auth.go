package emulator

import (
	"net/http"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// authorize checks the caller's OAuth token the way the Google front end does
// before any API logic runs.
func (s *Server) authorize(r *http.Request) error {
	if s.opts.Auth == AuthAny {
		return nil
	}
	token := requestToken(r)
	if token == "" {
		return core.ErrUnauthenticated()
	}
	if s.opts.Auth == AuthToken && token != s.opts.Token {
		return core.ErrBadCredentials()
	}
	return nil
}

// requestToken returns the caller's OAuth token: the "Authorization: Bearer"
// header, else the access_token query parameter, else the older oauth_token
// one (both are standard parameters of every Google API, see the discovery
// document), or "" when there is none. The header wins when both are sent.
func requestToken(r *http.Request) string {
	if token := bearerToken(r); token != "" {
		return token
	}
	q := r.URL.Query()
	if token := strings.TrimSpace(q.Get("access_token")); token != "" {
		return token
	}
	return strings.TrimSpace(q.Get("oauth_token"))
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
