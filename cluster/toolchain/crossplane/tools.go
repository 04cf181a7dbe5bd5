//go:build tools

package crossplanecli

import _ "github.com/crossplane/cli/v2/cmd/crossplane"
