//go:build !linux

package controlplane

// startReaper is a no-op off Linux, where there is no /proc to find the children;
// Stop still cleans up after every ordinary exit.
func startReaper(binaries []string, dirs []string) (dismiss func()) { return func() {} }
