package gcp

import (
	"context"
	"sort"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
)

// The Cloud Armor tiers of a project (compute v1 Project.cloudArmorTier).
const (
	TierStandard         = "CA_STANDARD"
	TierEnterprisePaygo  = "CA_ENTERPRISE_PAYGO"
	TierEnterpriseAnnual = "CA_ENTERPRISE_ANNUAL"
)

// A ProjectClient reads what a project holds as a whole: its Cloud Armor
// tier, and which of its backend services and network edge security
// services use which security policy. Reads are kept by the Client for its
// project read TTL (WithProjectReadTTL), so all the objects of a project
// reconciled within it share one read; errors are returned as GCP sent them.
type ProjectClient interface {
	// Tier is the project's Cloud Armor tier, as read at most one TTL ago.
	Tier(ctx context.Context, project string) (string, error)
	// FreshTier reads the tier from GCP (projects.get) and keeps it.
	FreshTier(ctx context.Context, project string) (string, error)
	// SetTier sets the tier (projects.setCloudArmorTier) and waits for the
	// global operation.
	SetTier(ctx context.Context, project, tier string) error
	// Users are the project's backend services (global and regional) by
	// the security policy they use, from one backendServices.aggregatedList.
	Users(ctx context.Context, project string) (PolicyUsers, error)
	// EdgeServices are the project's network edge security services by the
	// policy they apply, from one networkEdgeSecurityServices.aggregatedList.
	// A write through the Client to one of them drops the kept list.
	EdgeServices(ctx context.Context, project string) (PolicyUsers, error)
	// Buckets are the project's backend buckets by the edge security
	// policy they use, from one backendBuckets.list. A write through the
	// Client's BackendClient drops the kept list, as it does Users'.
	Buckets(ctx context.Context, project string) (PolicyUsers, error)
}

// A PolicyUser is a GCP object that uses a security policy.
type PolicyUser struct {
	// Name is the user's relative resource name, e.g.
	// projects/p/global/backendServices/web.
	Name string
	// Field is the user's field that names the policy: securityPolicy or
	// edgeSecurityPolicy.
	Field string
}

// PolicyUsers are the users of each policy, keyed by the policy's relative
// resource name (PolicyKey.String()), sorted by name.
type PolicyUsers map[string][]PolicyUser

// Of returns the users of the policy k.
func (u PolicyUsers) Of(k PolicyKey) []PolicyUser {
	return u[k.String()]
}

// Projects returns the Client's ProjectClient.
func (c *Client) Projects() ProjectClient {
	return &projectClient{Client: c}
}

type projectClient struct {
	*Client
}

var _ ProjectClient = &projectClient{}

func (c *projectClient) Tier(ctx context.Context, project string) (string, error) {
	return c.tier(ctx, project, false)
}

func (c *projectClient) FreshTier(ctx context.Context, project string) (string, error) {
	return c.tier(ctx, project, true)
}

func (c *projectClient) tier(ctx context.Context, project string, fresh bool) (string, error) {
	v, err := c.reads.get(ctx, "tier/"+project, fresh, func(ctx context.Context) (any, error) {
		p, err := c.svc.Projects.Get(project).Context(ctx).Do()
		c.calls.record(MethodProjectGet, err)
		if err != nil {
			return "", err
		}
		// GCP leaves the field out of a project never enrolled.
		if p.CloudArmorTier == "" {
			return TierStandard, nil
		}
		return p.CloudArmorTier, nil
	})
	s, _ := v.(string)
	return s, err
}

func (c *projectClient) SetTier(ctx context.Context, project, tier string) error {
	start := time.Now()
	op, err := c.svc.Projects.SetCloudArmorTier(project, &compute.ProjectsSetCloudArmorTierRequest{CloudArmorTier: tier}).Context(ctx).Do()
	c.calls.record(MethodSetTier, err)
	if err != nil {
		c.reads.invalidate("tier/" + project)
		return err
	}
	err = c.wait(ctx, project, "", op)
	c.calls.operation(MethodSetTier, start, err)
	if err != nil {
		c.reads.invalidate("tier/" + project)
		return err
	}
	// The operation is DONE: the project is on tier, for this Client's
	// readers too, without another read.
	c.reads.put("tier/"+project, tier)
	return nil
}

func (c *projectClient) Users(ctx context.Context, project string) (PolicyUsers, error) {
	return c.usersOf(ctx, "backends/"+project, MethodBackendAggregatedList, func(ctx context.Context, u PolicyUsers) error {
		return c.svc.BackendServices.AggregatedList(project).Context(ctx).Pages(ctx, func(l *compute.BackendServiceAggregatedList) error {
			for _, scoped := range l.Items {
				for _, b := range scoped.BackendServices {
					u.add(b.SecurityPolicy, PolicyUser{Name: RelativeName(b.SelfLink), Field: "securityPolicy"})
					u.add(b.EdgeSecurityPolicy, PolicyUser{Name: RelativeName(b.SelfLink), Field: "edgeSecurityPolicy"})
				}
			}
			return nil
		})
	})
}

func (c *projectClient) EdgeServices(ctx context.Context, project string) (PolicyUsers, error) {
	return c.usersOf(ctx, "edges/"+project, MethodEdgeAggregatedList, func(ctx context.Context, u PolicyUsers) error {
		return c.svc.NetworkEdgeSecurityServices.AggregatedList(project).Context(ctx).Pages(ctx, func(l *compute.NetworkEdgeSecurityServiceAggregatedList) error {
			for _, scoped := range l.Items {
				for _, s := range scoped.NetworkEdgeSecurityServices {
					u.add(s.SecurityPolicy, PolicyUser{Name: RelativeName(s.SelfLink), Field: "securityPolicy"})
				}
			}
			return nil
		})
	})
}

func (c *projectClient) Buckets(ctx context.Context, project string) (PolicyUsers, error) {
	return c.usersOf(ctx, "buckets/"+project, MethodBucketList, func(ctx context.Context, u PolicyUsers) error {
		return c.svc.BackendBuckets.List(project).Context(ctx).Pages(ctx, func(l *compute.BackendBucketList) error {
			for _, b := range l.Items {
				u.add(b.EdgeSecurityPolicy, PolicyUser{Name: RelativeName(b.SelfLink), Field: "edgeSecurityPolicy"})
			}
			return nil
		})
	})
}

// usersOf is a project-wide read of policy users, kept under key like
// every project read: list adds the users it reads to u, as the call m,
// which is counted.
func (c *projectClient) usersOf(ctx context.Context, key string, m Method, list func(ctx context.Context, u PolicyUsers) error) (PolicyUsers, error) {
	v, err := c.reads.get(ctx, key, false, func(ctx context.Context) (any, error) {
		u := PolicyUsers{}
		err := list(ctx, u)
		c.calls.record(m, err)
		return u.sorted(), err
	})
	u, _ := v.(PolicyUsers)
	return u, err
}

func (u PolicyUsers) add(policy string, user PolicyUser) {
	if policy == "" {
		return
	}
	k := RelativeName(policy)
	u[k] = append(u[k], user)
}

func (u PolicyUsers) sorted() PolicyUsers {
	for _, users := range u {
		sort.Slice(users, func(i, j int) bool {
			if users[i].Name != users[j].Name {
				return users[i].Name < users[j].Name
			}
			return users[i].Field < users[j].Field
		})
	}
	return u
}

// RelativeName is a compute URL's relative resource name: the part from
// "projects/" on (https://www.googleapis.com/compute/v1/projects/p/global/x/n
// is projects/p/global/x/n). A name without "projects/" is returned as is.
func RelativeName(url string) string {
	if i := strings.Index(url, "projects/"); i >= 0 {
		return url[i:]
	}
	return url
}
