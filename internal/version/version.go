// Package version holds the build version, stamped by the linker.
package version

// Version of the build, set with -ldflags "-X .../internal/version.Version=...".
var Version = "v0.0.0-dev"
