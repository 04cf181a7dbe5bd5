// Package repo locates files of this repository for the test suites.
package repo

import (
	"path/filepath"
	"runtime"
)

// Root is the repository's root folder.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Path joins elem to Root.
func Path(elem ...string) string {
	return filepath.Join(append([]string{Root()}, elem...)...)
}

// CRDDir is package/crds, the CustomResourceDefinitions the provider ships.
func CRDDir() string { return Path("package", "crds") }
