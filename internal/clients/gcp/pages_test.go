package gcp

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// TestListPagesBounded: a list whose every page names a next one (a server
// that never ends, or a project too large for a source) ends with a reason
// after MaxListPages, instead of reading for ever and holding it all.
func TestListPagesBounded(t *testing.T) {
	var served atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		if strings.Contains(r.URL.Path, "/aggregated/instances") {
			fmt.Fprintf(w, `{"items":{},"nextPageToken":"p%d"}`, n)
			return
		}
		fmt.Fprintf(w, `{"items":[{"name":"r%d","network":"global/networks/vpc"}],"nextPageToken":"p%d"}`, n, n)
	}))
	defer srv.Close()
	svc, err := compute.NewService(context.Background(), option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(svc, nil, nil)
	cases := map[string]func() error{
		"routers.list": func() error {
			_, err := c.NATs().Routers(context.Background(), "p", "us-central1", "vpc")
			return err
		},
		"instances.aggregatedList": func() error {
			_, err := c.Instances().List(context.Background(), "p", map[string]string{"pool": "web"})
			return err
		},
	}
	for method, list := range cases {
		t.Run(method, func(t *testing.T) {
			served.Store(0)
			err := list()
			if err == nil || !strings.Contains(err.Error(), "more than 200 pages") {
				t.Errorf("an endless list: want the bound's error, got %v", err)
			}
			if got := served.Load(); got != MaxListPages {
				t.Errorf("pages read: want %d, got %d", MaxListPages, got)
			}
		})
	}
}
