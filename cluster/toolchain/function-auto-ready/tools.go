//go:build tools

package functionautoready

import _ "github.com/crossplane/function-auto-ready"
