package v1beta1_test

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

var (
	_ resource.ProviderConfig           = &v1beta1.ProviderConfig{}
	_ resource.ProviderConfig           = &v1beta1.ClusterProviderConfig{}
	_ resource.TypedProviderConfigUsage = &v1beta1.ProviderConfigUsage{}
	_ resource.ProviderConfigUsageList  = &v1beta1.ProviderConfigUsageList{}
)
