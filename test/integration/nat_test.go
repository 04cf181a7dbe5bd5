package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// natPoll is the nat source's poll interval, the CRD's minimum.
const natPoll = 5 * time.Second

// TestNATSourceAllowlist runs an allowlist with a Cloud NAT source (every
// router of network vpc in two regions) against the real API server and the
// emulator, which speaks GCP's wire format: an address a NAT allocates is
// allowed within one poll; one it releases stays allowed while it drains and
// goes once GCP stops reporting it; a router of another network is never
// read; a manual NAT short of addresses is a warning on the AddressSet and
// the allowlist, which stay Ready; an outage of the routers' status holds the
// last addresses, says so, and recovers by itself.
func TestNATSourceAllowlist(t *testing.T) {
	f := startNATFixture(t)
	t.Run("Allocated", f.allocated)
	t.Run("DrainingStaysAllowed", f.draining)
	t.Run("OtherNetworkNeverRead", f.otherNetwork)
	t.Run("ShortOfAddressesWarns", f.shortOfAddresses)
	t.Run("OutageHoldsAndRecovers", f.outage)
}

// natFixture is a provider and an emulator with three routers, and an
// allowlist reading network vpc's.
type natFixture struct {
	e   *env
	al  *v1alpha1.SecurityPolicyAllowlist
	set *v1alpha1.AddressSet
}

// startNATFixture inserts router egress (AUTO_ONLY, two addresses) and
// manual (MANUAL_ONLY, one) on network vpc, elsewhere on network default,
// and an allowlist of network vpc's NATs and an office, and waits until GCP
// allows them.
func startNATFixture(t *testing.T) *natFixture {
	e := startProvider(t, emulator.Options{})
	e.insertRouter(t, "us-central1", "egress", "vpc", &compute.RouterNat{Name: "egress-nat", NatIpAllocateOption: "AUTO_ONLY",
		SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"})
	// A MANUAL_ONLY NAT names static addresses that must exist.
	if _, err := e.gcp.Addresses.Insert(project, "europe-west1", &compute.Address{Name: "manual-1"}).Do(); err != nil {
		t.Fatal(err)
	}
	e.insertRouter(t, "europe-west1", "manual", "vpc", &compute.RouterNat{Name: "manual-nat", NatIpAllocateOption: "MANUAL_ONLY",
		NatIps: []string{"regions/europe-west1/addresses/manual-1"}, SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"})
	e.insertRouter(t, "us-central1", "elsewhere", "default", &compute.RouterNat{Name: "elsewhere-nat", NatIpAllocateOption: "AUTO_ONLY",
		SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"})
	e.natKnob(t, "us-central1", "egress", "egress-nat", "needs", `{"addresses":2}`)
	e.natKnob(t, "us-central1", "elsewhere", "elsewhere-nat", "needs", `{"addresses":1}`)

	f := &natFixture{e: e, al: &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "egress"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy:  "egress-allowlist",
			CreatePolicy:    &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"},
			PriorityRange:   v1alpha1.AllowlistPriorityRange{First: 1000, Last: 1009},
			RuleDescription: "IPAllowlist default/egress",
			Sources: []v1alpha1.AllowlistSource{
				{Name: "office", CIDRs: []string{"203.0.113.0/26"}},
				{Name: "vpc", NAT: &v1alpha1.AllowlistNAT{ShrinkHoldSeconds: ptr.To[int32](0), NATSelector: v1alpha1.NATSelector{
					Network: "vpc", Regions: []string{"us-central1", "europe-west1"}, PollSeconds: ptr.To(int32(natPoll.Seconds()))}}},
			},
		},
	}, set: &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "egress-nodes-vpc"}}}
	ctx := context.Background()
	if err := e.kube.Create(ctx, f.al); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			_ = e.kube.Get(ctx, client.ObjectKeyFromObject(f.set), f.set)
			_ = e.kube.Get(ctx, client.ObjectKeyFromObject(f.al), f.al)
			t.Logf("on failure: emulator calls %v; AddressSet status %+v; allowlist status %+v", e.emu.Stats().Methods, f.set.Status, f.al.Status)
		}
	})
	e.waitAllowed(t, "egress-allowlist", 1000, 1009, f.want(t))
	return f
}

// want is what the policy should allow: network vpc's NAT addresses, as GCP
// reports them now, and the office.
func (f *natFixture) want(t *testing.T) []string {
	t.Helper()
	return append(slices.Concat(f.e.natAddresses(t, "us-central1", "egress"), f.e.natAddresses(t, "europe-west1", "manual")), "203.0.113.0/26")
}

// follow makes a change in GCP and waits for the policy to allow what
// change returns, within one poll.
func (f *natFixture) follow(t *testing.T, what string, change func() []string) {
	t.Helper()
	start := time.Now()
	f.e.waitAllowed(t, "egress-allowlist", 1000, 1009, change())
	took := time.Since(start)
	t.Logf("%s: the policy followed in %s (poll %s)", what, took.Round(10*time.Millisecond), natPoll)
	// One poll, plus the allowlist's own write to GCP and the test's look.
	if took > natPoll+3*time.Second {
		t.Errorf("%s: the policy followed in %s, want within one poll (%s) and 3 s", what, took, natPoll)
	}
}

func (f *natFixture) allocated(t *testing.T) {
	f.follow(t, "the NAT allocated an address", func() []string {
		f.e.natKnob(t, "us-central1", "egress", "egress-nat", "allocate", "")
		return f.want(t)
	})
}

// draining: a released address carries connections until the drain ends.
func (f *natFixture) draining(t *testing.T) {
	before := f.want(t)
	f.e.natKnob(t, "us-central1", "egress", "egress-nat", "release", "")
	st := f.e.routerStatus(t, "us-central1", "egress")
	if len(st.NatStatus) != 1 || len(st.NatStatus[0].DrainAutoAllocatedNatIps) != 1 {
		t.Fatalf("the released address is not draining: %+v", st.NatStatus)
	}
	drained := st.NatStatus[0].DrainAutoAllocatedNatIps[0] + "/32"
	if !slices.Contains(before, drained) {
		t.Fatalf("the drained address %s was not allowed before: %v", drained, before)
	}
	time.Sleep(2 * natPoll)
	f.e.waitAllowed(t, "egress-allowlist", 1000, 1009, f.want(t)) // the draining address with them
	f.follow(t, "the drain finished", func() []string {
		f.e.natKnob(t, "us-central1", "egress", "egress-nat", "finishDrain", "")
		return f.want(t)
	})
}

func (f *natFixture) otherNetwork(t *testing.T) {
	if n := f.e.emu.Stats().Methods["routers.getRouterStatus"]; n == 0 {
		t.Fatal("no getRouterStatus at all: the check below proves nothing")
	}
	f.e.get(t, f.set)
	for _, a := range f.e.natAddresses(t, "us-central1", "elsewhere") {
		if slices.Contains(f.set.Status.Addresses, a) {
			t.Errorf("the AddressSet holds %s of router elsewhere, on network default", a)
		}
	}
}

func (f *natFixture) shortOfAddresses(t *testing.T) {
	f.e.natKnob(t, "europe-west1", "manual", "manual-nat", "needs", `{"addresses":3}`)
	warning := "Cloud NAT europe-west1/manual/manual-nat needs 2 more address(es) (minExtraNatIpsNeeded)"
	eventually(t, waitFor, "the AddressSet and the allowlist to warn, Ready", func() error {
		f.e.get(t, f.set)
		f.e.get(t, f.al)
		c := f.set.Status.GetCondition(xpv2.TypeReady)
		if c.Status != corev1.ConditionTrue || !strings.Contains(c.Message, warning) || !containsPart(f.set.Status.Warnings, warning) {
			return fmt.Errorf("AddressSet Ready=%s %q, warnings %v", c.Status, c.Message, f.set.Status.Warnings)
		}
		if !containsPart(f.al.Status.Warnings, `nat source "vpc": `+warning) {
			return fmt.Errorf("allowlist warnings %v", f.al.Status.Warnings)
		}
		return nil
	})
}

// outage: routers that cannot be read keep their addresses, drained ones
// included, until they answer again.
func (f *natFixture) outage(t *testing.T) {
	held := f.want(t)
	fault := emulator.Faults{Methods: map[string]emulator.FaultRule{"routers.getRouterStatus": {ErrorRate: 1, ErrorCodes: []int{503}}}}
	if err := f.e.emu.SetFaults(fault); err != nil {
		t.Fatal(err)
	}
	f.e.natKnob(t, "us-central1", "egress", "egress-nat", "needs", `{"addresses":1}`)
	f.e.natKnob(t, "us-central1", "egress", "egress-nat", "finishDrain", "")
	eventually(t, waitFor, "the AddressSet to say the routers cannot be read", func() error {
		f.e.get(t, f.set)
		c := f.set.Status.GetCondition(xpv2.TypeReady)
		if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "cannot read the Cloud NAT of network vpc in us-central1, europe-west1 of project it-project since") ||
			!strings.Contains(c.Message, "Error 503") {
			return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
		}
		return nil
	})
	time.Sleep(2 * natPoll)
	f.e.waitAllowed(t, "egress-allowlist", 1000, 1009, held) // unreadable is not empty

	if err := f.e.emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	f.follow(t, "the routers recovered", func() []string { return f.want(t) })
	eventually(t, waitFor, "the AddressSet to be Ready again", func() error {
		f.e.get(t, f.set)
		if c := f.set.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
		}
		return nil
	})
}

func containsPart(list []string, part string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.Contains(s, part) })
}

// insertRouter inserts a Cloud Router of network with nats.
func (e *env) insertRouter(t *testing.T, region, name, network string, nats ...*compute.RouterNat) {
	t.Helper()
	r := &compute.Router{Name: name, Network: "global/networks/" + network, Nats: nats}
	op, err := e.gcp.Routers.Insert(project, region, r).Do()
	if err != nil {
		t.Fatal(err)
	}
	if op.Status != "DONE" {
		if _, err := e.gcp.RegionOperations.Wait(project, region, op.Name).Do(); err != nil {
			t.Fatal(err)
		}
	}
}

// natKnob calls the emulator's debug endpoint knob (needs, allocate,
// release, finishDrain) of a NAT: what GCP decides on its own.
func (e *env) natKnob(t *testing.T, region, router, nat, knob, body string) {
	t.Helper()
	url := fmt.Sprintf("%s/_emulator/routers/%s/%s/%s/nats/%s/%s", e.emu.URL(), project, region, router, nat, knob)
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = res.Body.Close() }()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s: %s %s", url, res.Status, b)
	}
}

// routerStatus is the router's status, as GCP answers it.
func (e *env) routerStatus(t *testing.T, region, router string) *compute.RouterStatus {
	t.Helper()
	s, err := e.gcp.Routers.GetRouterStatus(project, region, router).Do()
	if err != nil {
		t.Fatal(err)
	}
	if s.Result == nil {
		return &compute.RouterStatus{}
	}
	return s.Result
}

// natAddresses are every address the router's NATs use, active and
// draining, as host CIDRs.
func (e *env) natAddresses(t *testing.T, region, router string) []string {
	t.Helper()
	var out []string
	for _, n := range e.routerStatus(t, region, router).NatStatus {
		for _, a := range slices.Concat(n.AutoAllocatedNatIps, n.UserAllocatedNatIps, n.DrainAutoAllocatedNatIps, n.DrainUserAllocatedNatIps) {
			ip, err := netip.ParseAddr(a)
			if err != nil {
				t.Fatalf("router %s/%s reports address %q: %v", region, router, a, err)
			}
			out = append(out, netip.PrefixFrom(ip, ip.BitLen()).String())
		}
	}
	return out
}
