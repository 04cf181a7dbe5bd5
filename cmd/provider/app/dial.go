package app

import (
	"net/netip"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/internal/netguard"
)

// dialPolicy is the one dial policy of the provider, from the
// --allow-dial-cidr, --allow-dial-host and --deny-dial-cidr flags.
func dialPolicy(f *flags) (*netguard.Policy, error) {
	allow, err := prefixes(netguard.FlagAllowCIDR, f.allowDialCIDRs)
	if err != nil {
		return nil, err
	}
	deny, err := prefixes(netguard.FlagDenyCIDR, f.denyDialCIDRs)
	if err != nil {
		return nil, err
	}
	return netguard.New(allow, commaList(f.allowDialHosts), deny), nil
}

// prefixes parses a flag's values, each a CIDR or a single address, or a
// comma list of them.
func prefixes(flag string, values []string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, v := range commaList(values) {
		if a, err := netip.ParseAddr(v); err == nil {
			out = append(out, netip.PrefixFrom(a, a.BitLen()))
			continue
		}
		p, err := netip.ParsePrefix(v)
		if err != nil {
			return nil, errors.Errorf("%s %q is not a CIDR (10.0.0.0/8) or an address", flag, v)
		}
		out = append(out, p)
	}
	return out, nil
}

// commaList is values with each comma list split, blanks dropped.
func commaList(values []string) []string {
	var out []string
	for _, v := range values {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				out = append(out, part)
			}
		}
	}
	return out
}
