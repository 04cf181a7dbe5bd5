package main

import (
	"os"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/xpkg/signature"
)

// TestMain sends every request that is not to a loopback address to a
// closed port on the loopback, through a proxy that is not there: the tests
// never reach out (the registries they use are on 127.0.0.1, which Go never
// proxies), and TestCrossplaneValidatorOffline is offline even on a machine
// with a network.
func TestMain(m *testing.M) {
	for _, v := range []string{"HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"} {
		os.Setenv(v, "http://127.0.0.1:9")
	}
	os.Unsetenv("NO_PROXY")
	os.Unsetenv("no_proxy")
	os.Exit(m.Run())
}

// TestCrossplaneValidatorOffline pins why Crossplane v2.4.0 cannot verify
// our packages offline: its validator (crossplane-runtime's, built at
// start when --enable-signature-verification is on) fetches the Fulcio roots
// through sigstore's TUF client before anything else, even when every
// ImageConfig names a key. With the TUF cache as Crossplane starts it (an
// empty directory under its package cache) and no network, that fails, and
// so does Crossplane's start.
func TestCrossplaneValidatorOffline(t *testing.T) {
	t.Setenv("TUF_ROOT", t.TempDir())
	_, err := signature.NewCosignValidator(nil, nil, "crossplane-system", "crossplane")
	if err == nil {
		t.Fatal("Crossplane's cosign validator started without a network")
	}
	if !strings.Contains(err.Error(), "cannot fetch Fulcio roots") || !strings.Contains(err.Error(), "tuf") {
		t.Errorf("got %v, want it to fail fetching the Fulcio roots through TUF", err)
	}
	t.Logf("crossplane-runtime v2.4.0 NewCosignValidator, offline: %v", err)
}
