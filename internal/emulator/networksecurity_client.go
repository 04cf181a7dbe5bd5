package emulator

import (
	"context"

	networksecurity "google.golang.org/api/networksecurity/v1"
	"google.golang.org/api/option"
)

// NetworkSecurityEndpoint is the value for option.WithEndpoint of a
// networksecurity v1 client: URL() + "/". The address group API is served
// at the root, under /v1, as networksecurity.googleapis.com serves it.
func (r *Running) NetworkSecurityEndpoint() string { return r.url + "/" }

// NewNetworkSecurityService returns an official networksecurity v1 client
// for this emulator, sending a bearer token it accepts.
func (r *Running) NewNetworkSecurityService(ctx context.Context) (*networksecurity.Service, error) {
	return r.NewNetworkSecurityServiceWithToken(ctx, r.token())
}

// NewNetworkSecurityServiceWithToken returns an official networksecurity v1
// client for this emulator that sends the given bearer token.
func (r *Running) NewNetworkSecurityServiceWithToken(ctx context.Context, token string) (*networksecurity.Service, error) {
	return networksecurity.NewService(ctx, option.WithEndpoint(r.NetworkSecurityEndpoint()), clientWith(token))
}
