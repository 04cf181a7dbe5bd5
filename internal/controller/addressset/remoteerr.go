package addressset

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"net/http"

	kerrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/internal/netguard"
)

// describe says what failed in a call to a remote cluster's API server
// without the server's own words: a status code and what it means, a
// refused address, a bound, a TLS or network failure of the provider's own
// making. A server the tenant names may answer anything (another service's
// page, a metadata document, text made to look like the provider's), and
// client-go copies up to 2 KB of an answer into its errors; none of it
// reaches the AddressSet's status. Anything not known to be the provider's
// own text is said generically, and logged at debug level for the
// platform team.
func describe(call string, err error) error {
	var (
		refused  *netguard.Refused
		bound    *BoundError
		status   kerrors.APIStatus
		unknown  x509.UnknownAuthorityError
		hostname x509.HostnameError
		invalid  x509.CertificateInvalidError
		record   tls.RecordHeaderError
		dns      *net.DNSError
		op       *net.OpError
	)
	what := "the " + call + " of Nodes"
	switch {
	case errors.As(err, &refused):
		return refused
	case errors.As(err, &bound):
		return bound
	case errors.As(err, &status) && status.Status().Code != 0:
		code := int(status.Status().Code)
		return errors.Errorf("%s answered HTTP %d %s", what, code, http.StatusText(code))
	case errors.Is(err, context.DeadlineExceeded):
		return errors.Errorf("%s timed out", what)
	case errors.As(err, &unknown):
		return errors.Errorf("%s: the server's certificate is not signed by the kubeconfig's certificate-authority-data", what)
	case errors.As(err, &hostname):
		return errors.Errorf("%s: the server's certificate is not valid for its name (tls-server-name names another when it is issued so)", what)
	case errors.As(err, &invalid):
		return errors.Errorf("%s: the server's certificate is invalid (expired, not yet valid, or not for serving)", what)
	case errors.As(err, &record):
		return errors.Errorf("%s: the server does not speak TLS", what)
	case errors.As(err, &dns):
		return errors.Errorf("%s: cannot resolve %s", what, dns.Name)
	case errors.As(err, &op):
		return stableOp(op)
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return errors.Errorf("%s: the server closed the connection", what)
	}
	return errors.Errorf("%s failed; its error is not shown, as it may hold the server's text (the provider logs it at debug level)", what)
}

// stableOp is a network error without what changes with every retry of
// an outage, which would rewrite the held message each time: a broken
// connection's local port.
func stableOp(oe *net.OpError) error {
	return &net.OpError{Op: oe.Op, Net: oe.Net, Addr: oe.Addr, Err: oe.Err}
}
