//go:build tools

// Package helm pins the helm CLI that installs Crossplane's chart on the node.
package helm

import _ "helm.sh/helm/v3/cmd/helm"
