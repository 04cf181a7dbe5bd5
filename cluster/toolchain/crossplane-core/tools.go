//go:build tools

package crossplanecore

import _ "github.com/crossplane/crossplane/v2/cmd/crossplane"
