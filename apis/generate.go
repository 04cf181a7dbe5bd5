//go:build generate

// Package apis holds the provider's API types. `go generate ./apis/...` (run by
// `make generate`) regenerates deepcopy functions, Crossplane method sets,
// reference resolvers and the CRDs under package/crds.
package apis

// Remove existing CRDs so that a deleted kind does not leave a stale file.
//go:generate rm -rf ../package/crds

// Deepcopy functions and CRD manifests. allowDangerousTypes admits the float64
// thresholds of adaptiveProtectionConfig, which GCP defines as doubles.
//go:generate go tool controller-gen object:headerFile=../hack/boilerplate.go.txt paths=./... crd:crdVersions=v1,allowDangerousTypes=true output:artifacts:config=../package/crds

// Crossplane method sets (resource.Managed, ProviderConfig, usages) and reference resolvers.
//go:generate go tool angryjet generate-methodsets --header-file=../hack/boilerplate.go.txt ./...
