package harness

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// Token is the bearer token the emulator accepts in AuthToken mode.
const Token = "harness-token"

// ClusterConfig creates Secret default/<name>-token holding Token and a
// ClusterProviderConfig called name (source AccessToken) pointing at the
// emulator.
func (e *Env) ClusterConfig(t *testing.T, name, project string) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name + "-token"},
		StringData: map[string]string{"token": Token}}
	if err := e.Admin.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	ep := e.Emu.Endpoint()
	cpc := &v1beta1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1beta1.ClusterProviderConfigSpec{ProjectID: project, Endpoint: &ep,
			Credentials: v1beta1.ClusterProviderCredentials{Source: v1beta1.CredentialsSourceAccessToken,
				SecretRef: &xpv2.SecretKeySelector{
					SecretReference: xpv2.SecretReference{Namespace: "default", Name: s.Name}, Key: "token"}}},
	}
	if err := e.Admin.Create(ctx, cpc); err != nil {
		t.Fatal(err)
	}
}

// Condition is one status condition.
type Condition struct{ Status, Reason, Message string }

// Conditions reads o afresh and returns its conditions by type.
func (e *Env) Conditions(o client.Object) (map[string]Condition, error) {
	if err := e.Admin.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
		return nil, err
	}
	c, ok := o.(interface {
		GetCondition(xpv2.ConditionType) xpv2.Condition
	})
	if !ok {
		return nil, fmt.Errorf("%T has no conditions", o)
	}
	out := map[string]Condition{}
	for _, ct := range []xpv2.ConditionType{xpv2.TypeReady, xpv2.TypeSynced} {
		cond := c.GetCondition(ct)
		out[string(ct)] = Condition{Status: string(cond.Status), Reason: string(cond.Reason), Message: cond.Message}
	}
	return out, nil
}

// ReadyAndSynced returns nil when o is Ready=True and Synced=True.
func (e *Env) ReadyAndSynced(o client.Object) error {
	c, err := e.Conditions(o)
	if err != nil {
		return err
	}
	for _, ct := range []string{"Ready", "Synced"} {
		if c[ct].Status != "True" {
			return fmt.Errorf("%s %s: %s=%s (%s: %s)", o.GetObjectKind().GroupVersionKind().Kind, client.ObjectKeyFromObject(o), ct, c[ct].Status, c[ct].Reason, c[ct].Message)
		}
	}
	return nil
}

// Gone returns nil when o no longer exists.
func (e *Env) Gone(o client.Object) error {
	err := e.Admin.Get(context.Background(), client.ObjectKeyFromObject(o), o)
	if kerrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	return fmt.Errorf("%s still exists (finalizers %v)", client.ObjectKeyFromObject(o), o.GetFinalizers())
}

// Update reads o, applies mutate and writes it back, retrying on conflicts
// with the provider's own writes.
func (e *Env) Update(ctx context.Context, o client.Object, mutate func()) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := e.Admin.Get(ctx, client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		mutate()
		return e.Admin.Update(ctx, o)
	})
}
