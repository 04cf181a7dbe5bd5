package ha

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

const (
	policies = 10 // SecurityPolicies created at once
	rulesPer = 10 // SecurityPolicyRule objects of each
	// writes is every GCP write convergence takes: an insert per policy and
	// an addRule per rule object.
	writes = policies * (1 + rulesPer)
	// killAfter is how many writes the leader makes before it is killed:
	// well into convergence, far from its end.
	killAfter = writes / 4

	// opLatency keeps each GCP write RUNNING for a while, as GCP does, so
	// that convergence takes long enough to be interrupted.
	opLatency = 100 * time.Millisecond

	project   = "ha-project"
	token     = "ha-token"
	leaseNS   = "crossplane-system"
	leaseName = "crossplane-leader-election-provider-cloudarmor"
	// Logged by client-go's leader election (klog, on stderr) when a
	// process starts trying to take the Lease, and when it takes it;
	// matched without case.
	attempting = "attempting to acquire leader lease"
	acquired   = "successfully acquired lease"

	// leaseDuration is the provider's default --leader-election-lease-duration:
	// a killed leader's Lease is taken over this long after its last renewal.
	leaseDuration = 15 * time.Second
	// retryPeriod is the default --leader-election-retry-period.
	retryPeriod = 2 * time.Second
	// maxRetryWait is the longest a standby waits between two tries:
	// client-go adds a jitter of up to 1.2 retry periods.
	maxRetryWait = retryPeriod * 22 / 10
	// maxFailover bounds kill -> new holder: the standby counts the lease
	// duration from when it saw the last renewal, which it polls for between
	// tries, and takes the Lease at its next try after that.
	maxFailover = maxRetryWait + leaseDuration + maxRetryWait + time.Second
)

// A mutation is a GCP write the emulator accepted, when it accepted it.
type mutation struct {
	at     time.Time
	method string // e.g. securityPolicies.addRule
	policy string // projects/p/global/securityPolicies/n
}

// mutationLog records the emulator's accepted writes, and the lines of the
// writes it refused (its Logf).
type mutationLog struct {
	mu      sync.Mutex
	all     []mutation
	refused []refusal
}

// A refusal is a write the emulator refused, when it refused it.
type refusal struct {
	at   time.Time
	line string // e.g. securityPolicies.addRule /compute/v1/projects/... refused=400 ...
}

func (r refusal) String() string { return r.at.Format("15:04:05.000") + " " + r.line }

func (l *mutationLog) logf(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	f := strings.Fields(line)
	if len(f) < 3 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	switch {
	case strings.HasPrefix(f[2], "operation="):
		l.all = append(l.all, mutation{at: time.Now(), method: f[0], policy: f[1]})
	case strings.HasPrefix(f[2], "refused="):
		l.refused = append(l.refused, refusal{at: time.Now(), line: line})
	}
}

// refusedOf returns the refused writes to the policy at path. A refusal
// names the URL path, which the emulator serves with or without the
// /compute/v1 prefix.
func (l *mutationLog) refusedOf(path string) []refusal {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []refusal
	for _, r := range l.refused {
		if strings.Contains(r.line, "/"+path+"/") {
			out = append(out, r)
		}
	}
	return out
}

func (l *mutationLog) list() []mutation {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.all)
}

// suite is one control plane, one emulator and two provider replicas.
type suite struct {
	cp    *controlplane.ControlPlane
	kube  client.Client
	emu   *emulator.Running
	gcp   *compute.Service
	muts  *mutationLog
	provs [2]*provider.Process
	// killed is when TestFailover killed the leader.
	killed time.Time
}

func setup(t *testing.T) *suite {
	t.Helper()
	if testing.Short() {
		t.Skip("ha: skipped with -short")
	}
	s := &suite{muts: &mutationLog{}}
	s.cp = controlplane.StartT(t, controlplane.Options{CRDDirs: []string{repo.CRDDir()}, Scheme: kube.SchemeT(t)})
	s.kube = s.cp.Client
	s.emu = emulator.Start(t, emulator.Options{OpLatency: opLatency, Auth: emulator.AuthToken, Token: token, Logf: s.muts.logf})
	var err error
	if s.gcp, err = s.emu.NewService(context.Background()); err != nil {
		t.Fatal(err)
	}

	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "ha-token"}, StringData: map[string]string{"token": token}}
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
	cpc.Spec.ProjectID = project
	cpc.Spec.Endpoint = armor.Ptr(s.emu.Endpoint())
	cpc.Spec.Credentials = pcv1beta1.ClusterProviderCredentials{Source: pcv1beta1.CredentialsSourceAccessToken,
		SecretRef: &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: armor.Namespace, Name: "ha-token"}, Key: "token"}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: leaseNS}}, secret, cpc} {
		if err := s.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}

	logDir, err := os.MkdirTemp("", "provider-cloudarmor-ha-logs-")
	if err != nil {
		t.Fatal(err)
	}
	for i := range s.provs {
		s.provs[i] = &provider.Process{
			Bin:        providerBin,
			Kubeconfig: s.cp.KubeconfigPath,
			LogPath:    filepath.Join(logDir, fmt.Sprintf("provider-%d.log", i)),
			Label:      fmt.Sprintf("ha replica %d", i),
			Args: []string{
				"--leader-election",
				"--leader-election-namespace=" + leaseNS,
				"--poll=1m",
				"--timeout=30s",
				"--metrics-bind-address=0",
				"--health-probe-bind-address=0",
			},
		}
	}
	// Registered after the control plane's and the emulator's cleanups,
	// so it runs before them. Each replica also dies with this process
	// (provider.Process sets a parent-death signal), and the control plane
	// has its reaper, so a harness that dies hard leaves nothing running.
	t.Cleanup(func() {
		for _, p := range s.provs {
			p.Kill()
		}
		if t.Failed() {
			t.Logf("emulator stats: %+v", s.emu.Stats())
			for _, p := range s.provs {
				t.Logf("%s log (%s), last 40 lines:\n%s", p.Label, p.LogPath, p.Tail(40))
			}
			return
		}
		_ = os.RemoveAll(logDir)
	})
	return s
}

// TestFailover kills the leader mid-convergence and measures how soon the
// standby takes over, then stops the new leader cleanly and measures the
// handover back.
func TestFailover(t *testing.T) {
	s := setup(t)
	for _, p := range s.provs {
		p.Start(t)
	}
	leader, standby := s.leader(t)
	holder := s.lease(t).holder
	t.Logf("%s leads (%s); %s stands by", leader.Label, holder, standby.Label)

	want := s.createObjects(t)
	s.eventually(t, 60*time.Second, fmt.Sprintf("%d GCP writes before the kill", killAfter), func() error {
		if n := len(s.muts.list()); n < killAfter {
			return fmt.Errorf("%d writes", n)
		}
		return nil
	}, 5*time.Millisecond)
	killed := time.Now()
	s.killed = killed
	leader.Kill()
	before := len(s.muts.list())
	if before >= writes {
		t.Fatalf("convergence had ended (%d of %d writes) before the leader was killed", before, writes)
	}

	// The standby takes the Lease once it expires.
	var l leaseState
	s.eventually(t, maxFailover+5*time.Second, "the standby to take the Lease", func() error {
		l = s.lease(t)
		if l.holder == "" || l.holder == holder {
			return fmt.Errorf("held by %q", l.holder)
		}
		return nil
	}, 20*time.Millisecond)
	seen := time.Now()
	// client-go logs the acquisition after its write of the Lease returns:
	// on a loaded machine the test can read the Lease first.
	s.eventually(t, 5*time.Second, fmt.Sprintf("%s, which holds the Lease (%s), to log %q", standby.Label, l.holder, acquired), func() error {
		if !logged(standby, acquired) {
			return errors.New("not logged")
		}
		return nil
	}, 20*time.Millisecond)

	s.waitConverged(t, want)
	converged := time.Now()
	muts := s.muts.list()
	first := firstAfter(muts, l.acquired)
	if first == nil {
		t.Fatal("no GCP write after the standby took the Lease: the killed leader cannot have finished")
	}
	if d := l.acquired.Sub(killed); d > maxFailover {
		t.Errorf("the standby took the Lease %s after the kill, want at most %s", d.Round(time.Millisecond), maxFailover)
	}
	if d := first.at.Sub(l.acquired); d > 5*time.Second {
		t.Errorf("the new leader's first GCP write came %s after it took the Lease, want at most 5s", d.Round(time.Millisecond))
	}
	// Nobody wrote while nobody led: the killed leader's last requests land
	// within moments of the kill, the standby's only after it took the Lease.
	for _, m := range muts {
		if m.at.After(killed.Add(time.Second)) && m.at.Before(l.acquired) {
			t.Errorf("GCP write %s %s at kill+%s, before the standby took the Lease at kill+%s", m.method, m.policy,
				m.at.Sub(killed).Round(time.Millisecond), l.acquired.Sub(killed).Round(time.Millisecond))
		}
	}
	s.assertNoDuplicates(t)
	t.Logf("kill -9 of the leader after %d of %d GCP writes (lease duration %s, renew deadline 10s, retry period %s):", before, writes, leaseDuration, retryPeriod)
	t.Logf("  kill -> new holder in the Lease (acquireTime): %s (seen by the test after %s)", l.acquired.Sub(killed).Round(time.Millisecond), seen.Sub(killed).Round(time.Millisecond))
	t.Logf("  kill -> first GCP write by the new leader:    %s", first.at.Sub(killed).Round(time.Millisecond))
	t.Logf("  kill -> converged (every object Ready, GCP exact): %s; %d GCP writes after the kill", converged.Sub(killed).Round(time.Millisecond), len(muts)-before)

	// A clean stop releases the Lease: the restarted replica takes it at
	// its next retry instead of waiting out the lease duration.
	leader.Start(t)
	s.eventually(t, 30*time.Second, leader.Label+" to stand by", func() error {
		if !logged(leader, attempting) {
			return errors.New("not yet trying to acquire the Lease")
		}
		return nil
	}, 50*time.Millisecond)
	// Past its first try, so that the handover waits for a retry as it
	// would in a running cluster.
	time.Sleep(2 * retryPeriod)
	holder = l.holder
	stopped := time.Now()
	standby.Stop(syscall.SIGTERM, 30*time.Second)
	exited := time.Now()
	s.eventually(t, leaseDuration, "the restarted replica to take the released Lease", func() error {
		l = s.lease(t)
		if l.holder == "" || l.holder == holder {
			return fmt.Errorf("held by %q", l.holder)
		}
		return nil
	}, 20*time.Millisecond)
	handover := l.acquired.Sub(stopped)
	t.Logf("clean stop (SIGTERM) of the leader: exited after %s; stop -> new holder in the Lease: %s",
		exited.Sub(stopped).Round(time.Millisecond), handover.Round(time.Millisecond))
	if bound := exited.Sub(stopped) + maxRetryWait + time.Second; handover > bound {
		t.Errorf("clean handover took %s, want at most %s: the Lease was not released on stop", handover.Round(time.Millisecond), bound.Round(time.Millisecond))
	}
	after := len(s.muts.list())
	time.Sleep(2 * time.Second)
	s.waitConverged(t, want)
	if n := len(s.muts.list()); n != after {
		t.Errorf("%d GCP writes after the clean handover of a converged state, want 0", n-after)
	}
	s.assertNoDuplicates(t)
}

// leader waits until one replica has taken the Lease and returns it and the
// other one.
func (s *suite) leader(t *testing.T) (leader, standby *provider.Process) {
	t.Helper()
	s.eventually(t, 30*time.Second, "a replica to take the Lease", func() error {
		var n int
		for i, p := range s.provs {
			if logged(p, acquired) {
				leader, standby, n = p, s.provs[1-i], n+1
			}
		}
		if n != 1 {
			return fmt.Errorf("%d replicas logged %q", n, acquired)
		}
		return nil
	}, 50*time.Millisecond)
	return leader, standby
}

// logged reports whether p's log holds msg, whatever its case.
func logged(p *provider.Process, msg string) bool {
	return strings.Contains(strings.ToLower(string(p.Log())), msg)
}

// leaseState is what the Lease says.
type leaseState struct {
	holder   string
	acquired time.Time
}

func (s *suite) lease(t *testing.T) leaseState {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := s.kube.Get(context.Background(), client.ObjectKey{Namespace: leaseNS, Name: leaseName}, l); err != nil {
		return leaseState{}
	}
	var st leaseState
	if l.Spec.HolderIdentity != nil {
		st.holder = *l.Spec.HolderIdentity
	}
	if l.Spec.AcquireTime != nil {
		st.acquired = l.Spec.AcquireTime.Time
	}
	return st
}

// createObjects creates the policies and their rule objects (by reference)
// and returns the GCP rules each policy must end with.
func (s *suite) createObjects(t *testing.T) map[string][]string {
	t.Helper()
	want := map[string][]string{}
	for i := range policies {
		name := fmt.Sprintf("ha-%d", i)
		sp := armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) { p.Description = armor.Ptr("ha") })
		if err := s.kube.Create(context.Background(), sp); err != nil {
			t.Fatal(err)
		}
		for j := range rulesPer {
			r := armor.NewRule(fmt.Sprintf("%s-%d", name, j), name, armor.AllowRule(int64(1000+j), v1beta1.IPRange(fmt.Sprintf("10.%d.%d.0/24", i, j))))
			if err := s.kube.Create(context.Background(), r); err != nil {
				t.Fatal(err)
			}
			want[name] = append(want[name], fmt.Sprintf("%d:allow:10.%d.%d.0/24", 1000+j, i, j))
		}
		want[name] = append(want[name], fmt.Sprintf("%d:allow:*", v1beta1.DefaultRulePriority))
	}
	return want
}

// waitConverged waits until GCP holds exactly want and every object is
// Ready and Synced.
func (s *suite) waitConverged(t *testing.T, want map[string][]string) {
	t.Helper()
	s.eventually(t, 90*time.Second, "GCP to hold exactly the desired rules", func() error {
		l, err := s.gcp.SecurityPolicies.List(project).Do()
		if err != nil {
			return err
		}
		if len(l.Items) != len(want) {
			return fmt.Errorf("%d policies, want %d", len(l.Items), len(want))
		}
		for _, sp := range l.Items {
			if got := armor.RulesOf(sp); !slices.Equal(got, want[sp.Name]) {
				return fmt.Errorf("%s: rules %v, want %v", sp.Name, got, want[sp.Name])
			}
		}
		return nil
	}, 200*time.Millisecond)
	s.eventually(t, 60*time.Second, "every object to be Ready and Synced", func() error {
		var notReady []string
		pl := &v1beta1.SecurityPolicyList{}
		rl := &v1beta1.SecurityPolicyRuleList{}
		if err := s.kube.List(context.Background(), pl); err != nil {
			return err
		}
		if err := s.kube.List(context.Background(), rl); err != nil {
			return err
		}
		var objs []interface {
			GetName() string
			GetCondition(xpv2.ConditionType) xpv2.Condition
		}
		for i := range pl.Items {
			objs = append(objs, &pl.Items[i])
		}
		for i := range rl.Items {
			objs = append(objs, &rl.Items[i])
		}
		for _, o := range objs {
			if o.GetCondition(xpv2.TypeReady).Status != corev1.ConditionTrue || o.GetCondition(xpv2.TypeSynced).Status != corev1.ConditionTrue {
				notReady = append(notReady, o.GetName())
			}
		}
		if len(notReady) > 0 {
			return fmt.Errorf("%d objects not Ready and Synced, e.g. %s", len(notReady), notReady[0])
		}
		return nil
	}, 200*time.Millisecond)
}

// cutOff is how the emulator refuses a request whose body never arrived.
// The GCP client sends a request's headers and body in two writes (its
// OpenTelemetry transport wraps the body, so net/http flushes the headers
// first), and a leader killed between the two leaves a request with no
// body: it changes nothing, in the emulator as in GCP.
const cutOff = `refused=400 reason=parseError message="Invalid JSON payload received. Cannot read request body."`

// assertNoDuplicates checks that GCP was asked to insert each policy once
// and to add each rule once. The emulator counts every request, accepted or
// refused, so a second attempt by either replica would show. The only
// requests allowed beyond those are ones the kill cut off before their body
// (cutOff): they are not a second attempt but a first one that never arrived.
func (s *suite) assertNoDuplicates(t *testing.T) {
	t.Helper()
	st := s.emu.Stats()
	for i := range policies {
		path := fmt.Sprintf("projects/%s/global/securityPolicies/ha-%d", project, i)
		calls := st.Policies[path]
		refused := s.muts.refusedOf(path)
		got := map[string]int64{}
		for m, n := range calls {
			if isWrite(m) {
				got[m] = n
			}
		}
		for _, r := range refused {
			if s.cutOffByKill(r) {
				got[strings.Fields(r.line)[0]]--
			}
		}
		want := map[string]int64{"securityPolicies.insert": 1, "securityPolicies.addRule": rulesPer}
		if !mapsEqual(want, got) {
			t.Errorf("%s: GCP writes %v, want %v (all calls: %v); refused writes: %q", path, got, want, calls, refused)
		}
	}
	if st.NotReady != 0 {
		t.Errorf("%d writes refused with resourceNotReady: writes to one policy overlapped", st.NotReady)
	}
}

// cutOffByKill reports whether r is a request the kill of the leader cut
// off: refused for its missing body, within moments of the kill. The standby
// writes nothing until it takes the Lease, at least a lease duration later.
func (s *suite) cutOffByKill(r refusal) bool {
	return strings.Contains(r.line, cutOff) && !s.killed.IsZero() &&
		!r.at.Before(s.killed) && r.at.Before(s.killed.Add(5*time.Second))
}

func isWrite(method string) bool {
	switch method[strings.LastIndex(method, ".")+1:] {
	case "insert", "patch", "delete", "addRule", "patchRule", "removeRule", "setLabels":
		return true
	}
	return false
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// firstAfter returns the first mutation at or after t.
func firstAfter(muts []mutation, t time.Time) *mutation {
	for i := range muts {
		if !muts[i].at.Before(t) {
			return &muts[i]
		}
	}
	return nil
}

// eventually polls cond every interval until it returns nil, failing the
// test after timeout, or at once when a running replica exits on its own.
func (s *suite) eventually(t *testing.T, timeout time.Duration, what string, cond func() error, interval time.Duration) {
	t.Helper()
	wait.Eventually(t, timeout, what, cond, wait.Every(interval), wait.AbortOn(func() error {
		for _, p := range s.provs {
			if err := p.ExitedUnexpectedly(); err != nil {
				return fmt.Errorf("%s: %w", p.Label, err)
			}
		}
		return nil
	}))
}
