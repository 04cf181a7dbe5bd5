package v1beta1_test

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	v1beta1 "github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

var (
	_ resource.ModernManaged = &v1beta1.SecurityPolicy{}
	_ resource.ModernManaged = &v1beta1.SecurityPolicyRule{}
)
