package stack

import "testing"

func TestOnlyRevisions(t *testing.T) {
	cases := map[string]struct {
		left []string
		want bool
	}{
		"Revisions": {left: []string{"providerrevision.pkg.crossplane.io/armorplane-provider-cloudarmor-3d78a9e0364d", "functionrevision.pkg.crossplane.io/f-1"}, want: true},
		"AnXRD":     {left: []string{"providerrevision.pkg.crossplane.io/p-1", "compositeresourcedefinition.apiextensions.crossplane.io/ipallowlists.platform.armorplane.io"}, want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := onlyRevisions(tc.left); got != tc.want {
				t.Errorf("onlyRevisions(%q) = %t, want %t", tc.left, got, tc.want)
			}
		})
	}
}
