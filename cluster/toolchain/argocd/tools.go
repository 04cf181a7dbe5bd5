//go:build tools

package argocd

import _ "github.com/argoproj/argo-cd/v3/cmd"
