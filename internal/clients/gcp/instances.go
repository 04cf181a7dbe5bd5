package gcp

import (
	"context"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// StatusRunning is the status of an instance that is up: the only one
// whose addresses are in use.
const StatusRunning = "RUNNING"

// An Instance is what an allowlist needs of a Compute Engine instance.
type Instance struct {
	Name string
	// Zone is the zone's name, e.g. us-central1-a.
	Zone   string
	Status string
	Labels map[string]string
	// External are the accessConfigs' natIP (/32) and the
	// ipv6AccessConfigs' externalIpv6 with its prefix length (an instance
	// owns a /96 and may send from any address of it).
	External []netip.Prefix
	// Internal are the networkIP (/32) and the ipv6Address with its prefix
	// length (/128 when GCP gives none).
	Internal []netip.Prefix
	// Invalid are addresses GCP returned that do not parse, as
	// "field value"; the caller decides what to do with the instance.
	Invalid []string
}

// Instances are the instances one list found, sorted by zone and name.
type Instances struct {
	Items []Instance
	// Unreachable are the scopes ("zones/us-central1-a") GCP could not
	// list this time (returnPartialSuccess): their instances are missing
	// from Items, not gone.
	Unreachable []string
}

// An InstanceClient lists Compute Engine instances.
type InstanceClient interface {
	// List lists the instances of project with every label of
	// matchLabels, in one instances.aggregatedList (one call per page).
	List(ctx context.Context, project string, matchLabels map[string]string) (Instances, error)
}

// Instances returns the Client's InstanceClient.
func (c *Client) Instances() InstanceClient { return instanceClient{c} }

type instanceClient struct{ *Client }

func (c instanceClient) List(ctx context.Context, project string, matchLabels map[string]string) (Instances, error) {
	filter, err := LabelFilter(matchLabels)
	if err != nil {
		return Instances{}, err
	}
	var out Instances
	call := c.svc.Instances.AggregatedList(project).Filter(filter).Context(ctx)
	for token, page := "", 0; ; page++ {
		if page == MaxListPages {
			return Instances{}, errTooManyPages("instances.aggregatedList")
		}
		// The generated call has no setter for returnPartialSuccess: a zone
		// GCP cannot list then comes back as unreachable, not as an error
		// of the whole list.
		l, err := call.PageToken(token).Do(googleapi.QueryParameter("returnPartialSuccess", "true"))
		// Each page is a call GCP counts against the project's quota.
		c.calls.record(MethodInstanceAggregatedList, err)
		if err != nil {
			return Instances{}, err
		}
		out.add(l)
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	out.sort()
	return out, nil
}

// MaxListPages bounds the pages a source's list reads in one poll: at
// GCP's 500 items a page, 100,000 instances or routers, more than any
// allowlist reads, and a bound on what one answer can make the provider hold.
const MaxListPages = 200

func errTooManyPages(method string) error {
	return fmt.Errorf("%s returned more than %d pages: narrow the source (labels, regions) or split it", method, MaxListPages)
}

// add adds one page of an aggregated list.
func (in *Instances) add(l *compute.InstanceAggregatedList) {
	in.Unreachable = append(in.Unreachable, l.Unreachables...)
	for scope, sl := range l.Items {
		if sl.Warning != nil && sl.Warning.Code == "UNREACHABLE" {
			in.Unreachable = append(in.Unreachable, scope)
		}
		for _, i := range sl.Instances {
			in.Items = append(in.Items, InstanceOf(i))
		}
	}
}

func (in *Instances) sort() {
	slices.SortFunc(in.Items, func(a, b Instance) int {
		if c := strings.Compare(a.Zone, b.Zone); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	slices.Sort(in.Unreachable)
	in.Unreachable = slices.Compact(in.Unreachable)
}

// InstanceOf extracts what an allowlist needs from a compute instance.
func InstanceOf(i *compute.Instance) Instance {
	out := Instance{Name: i.Name, Zone: lastSegment(i.Zone), Status: i.Status, Labels: i.Labels}
	for _, n := range i.NetworkInterfaces {
		for _, ac := range n.AccessConfigs {
			out.External = out.add(out.External, "natIP", ac.NatIP, 0)
		}
		for _, ac := range n.Ipv6AccessConfigs {
			out.External = out.add(out.External, "externalIpv6", ac.ExternalIpv6, ac.ExternalIpv6PrefixLength)
		}
		out.Internal = out.add(out.Internal, "networkIP", n.NetworkIP, 0)
		out.Internal = out.add(out.Internal, "ipv6Address", n.Ipv6Address, n.InternalIpv6PrefixLength)
	}
	return out
}

// add appends address (of field) to to as a prefix of bits, a host prefix
// when bits is 0; an empty address is none, one that does not parse goes
// to Invalid.
func (i *Instance) add(to []netip.Prefix, field, address string, bits int64) []netip.Prefix {
	if address == "" {
		return to
	}
	ip, err := netip.ParseAddr(address)
	if err != nil {
		i.Invalid = append(i.Invalid, fmt.Sprintf("%s %q", field, address))
		return to
	}
	ip = ip.Unmap().WithZone("")
	if bits <= 0 || int(bits) > ip.BitLen() {
		bits = int64(ip.BitLen())
	}
	return append(to, netip.PrefixFrom(ip, int(bits)).Masked())
}

func lastSegment(url string) string {
	return url[strings.LastIndex(url, "/")+1:]
}

// labelKey and labelValue are GCP's label rules: a label that breaks them
// cannot exist, so a filter on it is a mistake to report, not an empty list.
var (
	labelKey   = regexp.MustCompile(`^[\p{Ll}\p{Lo}][\p{Ll}\p{Lo}\p{N}_-]{0,62}$`)
	labelValue = regexp.MustCompile(`^[\p{Ll}\p{Lo}\p{N}_-]{0,63}$`)
)

// LabelFilter is the compute list filter that selects the resources with
// every label of matchLabels: one parenthesized `labels.KEY = "VALUE"`
// expression per label, sorted by key, which compute ANDs.
func LabelFilter(matchLabels map[string]string) (string, error) {
	if len(matchLabels) == 0 {
		return "", errors.New("matchLabels is empty: a filter would select every instance of the project")
	}
	keys := make([]string, 0, len(matchLabels))
	for k := range matchLabels {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	exprs := make([]string, len(keys))
	for i, k := range keys {
		v := matchLabels[k]
		if !labelKey.MatchString(k) || !labelValue.MatchString(v) {
			return "", errors.Errorf("%s=%s is not a GCP label (keys start with a lowercase letter; keys and values hold lowercase letters, digits, '_' and '-', at most 63)", k, v)
		}
		exprs[i] = fmt.Sprintf("(labels.%s = %q)", k, v)
	}
	return strings.Join(exprs, " "), nil
}
