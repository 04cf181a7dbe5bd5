package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/protobuf/types/known/structpb"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	fnlogging "github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/function"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// TestAllowlistNeverLiveWithoutAllows runs the IPAllowlist function and the provider against
// the emulator, whose operations take a while as GCP's do, and samples GCP every 20 ms: at no
// sample may the backend name the allowlist's default-deny policy while the policy lacks a
// range the spec allows. A loop plays Crossplane: every 50 ms it runs the function on the
// IPAllowlist and the allowlist as the API server holds them, applies the allowlist it
// composes, and, once it composes the attachment, makes the backend name the policy (as the
// attachment's controller would). It covers creation (the policy and four rules of 35 static
// ranges: the attachment used to come 0.05 s after the allowlist, before any allow rule), a
// priority-range move, and a switch to an address group and back.
func TestAllowlistNeverLiveWithoutAllows(t *testing.T) {
	e := startProvider(t, emulator.Options{OpLatency: 300 * time.Millisecond, DefaultTier: emulator.TierEnterprisePaygo})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const backend, policy = "victim-be", "victim-allowlist"
	op, err := e.gcp.BackendServices.Insert(project, &compute.BackendService{Name: backend, LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, e.gcp, project, "", op)
	}
	if err != nil {
		t.Fatal(err)
	}
	cidrs := make([]string, 0, 35)
	for i := range 35 {
		cidrs = append(cidrs, fmt.Sprintf("198.18.%d.0/24", i))
	}
	xr := map[string]any{
		"apiVersion": "platform.armorplane.io/v1alpha1", "kind": "IPAllowlist",
		"metadata": map[string]any{"name": "victim", "namespace": armor.Namespace},
		"spec": map[string]any{
			"policy":        map[string]any{"name": policy, "create": true},
			"priorityRange": map[string]any{"first": 1000, "last": 1009},
			"staticSources": []any{map[string]any{"name": "partners", "cidrs": anys(cidrs)}},
			"attachTo":      []any{map[string]any{"backendService": backend}},
		},
	}
	xp := &crossplane{e: e, xr: xr}
	s := &gapSampler{e: e, backend: backend, policy: policy, want: prefixesOf(cidrs)}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); s.run(ctx) }()
	go func() { defer wg.Done(); xp.run(ctx, t) }()
	defer func() { cancel(); wg.Wait() }()

	step := func(what string, change func(spec map[string]any), done func() error) {
		xp.edit(change)
		start := time.Now()
		eventually(t, waitFor, what, done)
		t.Logf("%s: %v; %d samples, %d with the policy attached", what, time.Since(start).Round(100*time.Millisecond), s.samples(), s.attachedSamples())
	}
	step("creation: the backend names the policy", func(map[string]any) {}, func() error {
		if !s.isAttached() {
			return fmt.Errorf("not attached")
		}
		return nil
	})
	rulesAt := func(first, last int64) func() error {
		return func() error {
			sp, err := e.gcpPolicy("", policy)
			if err != nil {
				return err
			}
			for _, r := range sp.Rules {
				if r.Action == "allow" && (r.Priority < first || r.Priority > last || r.Match.Expr != nil) {
					return fmt.Errorf("an allow rule at %d that is not a range rule of %d-%d", r.Priority, first, last)
				}
			}
			return s.lacking(sp)
		}
	}
	step("priority range 1000-1009 to 2000-2009", func(spec map[string]any) {
		spec["priorityRange"] = map[string]any{"first": 2000, "last": 2009}
	}, rulesAt(2000, 2009))
	step("to address group victim", func(spec map[string]any) {
		spec["mode"] = "addressGroup"
		spec["addressGroup"] = map[string]any{"name": "victim", "capacity": 100}
	}, func() error {
		sp, err := e.gcpPolicy("", policy)
		if err != nil {
			return err
		}
		if n := len(sp.Rules); n != 2 {
			return fmt.Errorf("%d rules, want the group rule and the default", n)
		}
		return s.lacking(sp)
	})
	step("back to rules", func(spec map[string]any) {
		delete(spec, "mode")
		delete(spec, "addressGroup")
	}, rulesAt(2000, 2009))

	cancel()
	wg.Wait()
	if s.attachedSamples() == 0 {
		t.Fatal("no sample saw the policy attached: the test checked nothing")
	}
	for _, v := range s.violations() {
		t.Error(v)
	}
}

// crossplane plays Crossplane's composite reconciler for one IPAllowlist.
type crossplane struct {
	e  *env
	mu sync.Mutex
	xr map[string]any
}

func (c *crossplane) edit(change func(spec map[string]any)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	change(c.xr["spec"].(map[string]any))
}

func (c *crossplane) run(ctx context.Context, t *testing.T) {
	for ctx.Err() == nil {
		// A conflict is the cache behind another writer: the next pass reads the object again.
		if err := c.reconcile(ctx); err != nil && ctx.Err() == nil && !kerrors.IsConflict(err) {
			t.Errorf("composite reconcile: %v", err)
			return
		}
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// reconcile runs the function once and applies what it composes.
func (c *crossplane) reconcile(ctx context.Context) error {
	c.mu.Lock()
	xr, err := structpb.NewStruct(c.xr)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	al := &unstructured.Unstructured{}
	al.SetGroupVersionKind(v1alpha1.SecurityPolicyAllowlistGroupVersionKind)
	observed := map[string]*fnv1.Resource{}
	err = c.e.kube.Get(ctx, client.ObjectKey{Namespace: armor.Namespace, Name: "victim"}, al)
	switch {
	case err == nil:
		o, err := toStruct(al.Object)
		if err != nil {
			return err
		}
		observed["allowlist"] = &fnv1.Resource{Resource: o}
	case kerrors.IsNotFound(err):
		al = nil
	default:
		return err
	}
	if named := c.named(); named != "" {
		o, err := structpb.NewStruct(map[string]any{"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "SecurityPolicyAttachment",
			"metadata": map[string]any{"name": "victim-x7k2p"}, "spec": map[string]any{"forProvider": map[string]any{"securityPolicy": named}}})
		if err != nil {
			return err
		}
		observed["attachment-backendService-victim-be"] = &fnv1.Resource{Resource: o}
	}
	rsp, err := function.New(fnlogging.NewNopLogger()).RunFunction(ctx, &fnv1.RunFunctionRequest{
		Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: xr}, Resources: observed},
	})
	if err != nil {
		return err
	}
	for name, r := range rsp.GetDesired().GetResources() {
		switch {
		case name == "allowlist":
			if err := c.applyAllowlist(ctx, al, r.GetResource().AsMap()); err != nil {
				return err
			}
		case strings.HasPrefix(name, "attachment-"):
			if err := c.attach(ctx, r.GetResource().AsMap()); err != nil {
				return err
			}
		}
	}
	return nil
}

// applyAllowlist makes the allowlist's spec what the function composed.
func (c *crossplane) applyAllowlist(ctx context.Context, have *unstructured.Unstructured, desired map[string]any) error {
	if have == nil {
		u := &unstructured.Unstructured{Object: desired}
		u.SetNamespace(armor.Namespace)
		u.SetName("victim")
		return client.IgnoreAlreadyExists(c.e.kube.Create(ctx, u))
	}
	if sameJSON(have.Object["spec"], desired["spec"]) {
		return nil
	}
	have.Object["spec"] = desired["spec"]
	return c.e.kube.Update(ctx, have)
}

// named is the policy the backend names, by name; "" when none.
func (c *crossplane) named() string {
	b, err := c.e.gcp.BackendServices.Get(project, "victim-be").Do()
	if err != nil || b.SecurityPolicy == "" {
		return ""
	}
	return b.SecurityPolicy[strings.LastIndex(b.SecurityPolicy, "/")+1:]
}

// attach makes the backend name the policy the attachment names, as its controller would.
func (c *crossplane) attach(ctx context.Context, desired map[string]any) error {
	spec, _ := desired["spec"].(map[string]any)
	fp, _ := spec["forProvider"].(map[string]any)
	name, _ := fp["securityPolicy"].(string)
	if name == "" {
		return nil
	}
	link := fmt.Sprintf("projects/%s/global/securityPolicies/%s", project, name)
	b, err := c.e.gcp.BackendServices.Get(project, "victim-be").Do()
	if err != nil || gcp.RelativeName(b.SecurityPolicy) == link {
		return err
	}
	op, err := c.e.gcp.BackendServices.SetSecurityPolicy(project, "victim-be", &compute.SecurityPolicyReference{SecurityPolicy: link}).Do()
	if err == nil {
		err = gcp.WaitForOperation(ctx, c.e.gcp, project, "", op)
	}
	return err
}

// gapSampler reads GCP every 20 ms and records each sample in which the backend names the policy
// while the policy does not allow a wanted range.
type gapSampler struct {
	e               *env
	backend, policy string
	want            []netip.Prefix

	mu       sync.Mutex
	n, live  int
	attached bool
	found    []string
}

func (s *gapSampler) run(ctx context.Context) {
	for ctx.Err() == nil {
		s.sample()
		select {
		case <-ctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func (s *gapSampler) sample() {
	// The backend first: attachments are never undone here, so a policy read after a backend
	// that names it was named while read.
	b, err := s.e.gcp.BackendServices.Get(project, s.backend).Do()
	if err != nil {
		return
	}
	named := strings.HasSuffix(b.SecurityPolicy, "/securityPolicies/"+s.policy)
	var gap error
	if named {
		sp, err := s.e.gcpPolicy("", s.policy)
		if err != nil {
			return
		}
		gap = s.lacking(sp)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.n++
	s.attached = s.attached || named
	if named {
		s.live++
	}
	if gap != nil {
		s.found = append(s.found, fmt.Sprintf("%s: backend %s names policy %s, which %v", time.Now().Format("15:04:05.000"), s.backend, s.policy, gap))
	}
}

var addressGroupCall = regexp.MustCompile(`evaluateAddressGroup\('([^']+)', origin\.ip\)`)

// lacking says which wanted ranges the policy's allow rules, or the address groups they
// evaluate, do not hold; nil when none.
func (s *gapSampler) lacking(sp *compute.SecurityPolicy) error {
	var held []netip.Prefix
	for _, r := range sp.Rules {
		if r.Action != "allow" || r.Preview || r.Match == nil {
			continue
		}
		if r.Match.Config != nil {
			held = append(held, prefixesOf(r.Match.Config.SrcIpRanges)...)
		}
		if r.Match.Expr != nil {
			for _, call := range addressGroupCall.FindAllStringSubmatch(r.Match.Expr.Expression, -1) {
				held = append(held, s.groupItems(call[1])...)
			}
		}
	}
	var missing []string
	for _, w := range s.want {
		if !slices.ContainsFunc(held, func(h netip.Prefix) bool { return h.Bits() <= w.Bits() && h.Contains(w.Addr()) }) {
			missing = append(missing, w.String())
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("lacks %d of %d wanted ranges (%s)", len(missing), len(s.want), strings.Join(missing[:min(3, len(missing))], " "))
	}
	return nil
}

func (s *gapSampler) groupItems(name string) []netip.Prefix {
	ns, err := s.e.emu.NewNetworkSecurityServiceWithToken(context.Background(), token)
	if err != nil {
		return nil
	}
	g, err := ns.Projects.Locations.AddressGroups.Get(fmt.Sprintf("projects/%s/locations/global/addressGroups/%s", project, name)).Do()
	if err != nil {
		return nil
	}
	return prefixesOf(g.Items)
}

func (s *gapSampler) isAttached() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attached
}

func (s *gapSampler) samples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func (s *gapSampler) attachedSamples() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.live
}

func (s *gapSampler) violations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.found) > 5 {
		return append(s.found[:5:5], fmt.Sprintf("and %d more samples", len(s.found)-5))
	}
	return slices.Clone(s.found)
}

func prefixesOf(ss []string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		if p, err := netip.ParsePrefix(s); err == nil {
			out = append(out, p.Masked())
		} else if a, err := netip.ParseAddr(s); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return out
}

func anys(ss []string) []any {
	out := make([]any, 0, len(ss))
	for _, s := range ss {
		out = append(out, s)
	}
	return out
}

// toStruct converts u, whose numbers may be int64, to a protobuf Struct, as Crossplane sends it.
func toStruct(u map[string]any) (*structpb.Struct, error) {
	b, err := json.Marshal(u)
	if err != nil {
		return nil, err
	}
	s := &structpb.Struct{}
	return s, s.UnmarshalJSON(b)
}

// sameJSON reports whether a and b are equal as JSON.
func sameJSON(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	var va, vb any
	_ = json.Unmarshal(ja, &va)
	_ = json.Unmarshal(jb, &vb)
	ra, _ := json.Marshal(va)
	rb, _ := json.Marshal(vb)
	return string(ra) == string(rb)
}
