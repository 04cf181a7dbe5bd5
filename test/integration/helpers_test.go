package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

func staticToken(tok string) oauth2.TokenSource {
	return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok})
}

const waitFor = 60 * time.Second

// eventually polls cond until it returns nil or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, timeout, what, cond)
}

// waitReady waits until o is Ready=True and Synced=True.
func (e *env) waitReady(t *testing.T, o resource.Managed) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("%s to be Ready and Synced", o.GetName()), func() error {
		if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		for _, ct := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced} {
			if c := o.GetCondition(ct); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("%s=%s %s: %s", ct, c.Status, c.Reason, c.Message)
			}
		}
		return nil
	})
}

// gcpPolicy reads a policy straight from the emulator.
func (e *env) gcpPolicy(region, name string) (*compute.SecurityPolicy, error) {
	if region == "" {
		return e.gcp.SecurityPolicies.Get(project, name).Do()
	}
	return e.gcp.RegionSecurityPolicies.Get(project, region, name).Do()
}

func (e *env) waitGCPRules(t *testing.T, region, name string, want []string) {
	t.Helper()
	eventually(t, waitFor, "GCP rules of "+name, func() error {
		sp, err := e.gcpPolicy(region, name)
		if err != nil {
			return err
		}
		if got := armor.RulesOf(sp); !slices.Equal(got, want) {
			return fmt.Errorf("rules: want %v, got %v", want, got)
		}
		return nil
	})
}

func (e *env) mutations() int64 { return e.emu.Stats().Mutations }

func (e *env) get(t *testing.T, o client.Object) {
	t.Helper()
	if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		t.Fatal(err)
	}
}
