package addressset

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
)

// instances reads Compute Engine instances. IN PROGRESS: being written.
type instances struct{}

func newInstances(_ *connector.Connector) *instances { return &instances{} }

func (i *instances) Read(context.Context, *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	return Collected{}, 0, errors.New("instances are not read yet")
}

func (i *instances) Forget(types.NamespacedName) {}
