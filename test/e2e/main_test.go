// Package e2e tests the provider the way users run it: on the real node
// hack/shared-node.sh boots (test/framework/platform), as the pod Crossplane
// runs from our package, installed with `crossplane xpkg install`, with only
// the permissions Crossplane's RBAC manager and cluster/rbac give it. Tests
// drive it only through the node's API server (as kubectl would) and check
// GCP through the Cloud Armor emulator, which each test runs in-process (its
// counters, Stats and Snapshot are read directly) and exposes to the node's
// pods with Node.Expose. Without a node (NODE_ATTACH unset) and with -short
// the tests are skipped.
//
// Decisions:
//
//   - The node is shared with test/platform, test/tenancy and test/argocd,
//     which run before or after this package, and the tests here follow each
//     other on it: each test works in a namespace of its own (e2e-<test>),
//     into which the objects the scenarios and the examples put in "default"
//     are moved, and applies examples/providerconfig there with the endpoint
//     rewritten to its emulator (the Secret and the ClusterProviderConfig's
//     secretRef move with it). Its cleanup deletes the managed resources
//     first, through the provider while the emulator still answers and
//     their credentials are still there, then ClusterProviderConfig
//     "default" (test/argocd makes its own), then the namespaces.
//   - examples/allowlist is not applied: the IPAllowlist kinds are served on
//     the node, but those examples need Nodes and sources test/platform
//     makes, and rbac.yaml is the install's own.
//   - The CRDs are the ones the package installed.
//   - The provider runs with the node's flags (hack/shared-node.sh: --poll=5s
//     --poll-jitter=500ms --snapshot-ttl=4s --timeout=20s
//     --max-reconcile-rate=20); setup fails if the poll differs from the
//     bounds here. A test that needs other flags or containers (TestArrival's
//     --poll=1m, TestChangeLogs' sidecar) changes the provider's
//     DeploymentRuntimeConfig through platform.ReconfigureProvider, which
//     waits until a new pod leads and puts the config back afterwards.
//   - Killing the provider is SIGKILL to its process on the node, then its
//     pod deleted with no grace period before the kubelet restarts it: the
//     Deployment starts a new pod (platform.RestartProvider). A wait fails at
//     once when a Crossplane or package container restarts (platform.Err).
//     On failure the provider pod's log is printed, through kubectl.
//   - The pod's metrics are cumulative over every suite the node ran:
//     TestMetrics compares what they gained during the test.
//   - TestGCP needs no node: against real GCP it still runs its own API
//     server and the provider binary as a process.
package e2e
