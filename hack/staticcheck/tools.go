//go:build tools

// Package tools pins staticcheck, the linter `make lint` runs.
package tools

import _ "honnef.co/go/tools/cmd/staticcheck"
