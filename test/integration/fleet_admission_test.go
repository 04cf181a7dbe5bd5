package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// TestFleetSourceAdmission asserts what the API server admits of the remote
// sources, on the IPAllowlist (the XRD's schema as Crossplane serves it) and
// on the AddressSet the provider makes of each: a mistake is refused at
// admission, before any controller reads it.
func TestFleetSourceAdmission(t *testing.T) {
	e := startControlPlane(t)
	ctx := context.Background()
	if err := e.kube.Create(ctx, xrdAsCRD(t)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason   string
		manifest string
		wantErr  string // "" means accepted
	}{
		"RemoteCluster": {
			reason: "A node source of another cluster, by a Secret of the namespace.",
			manifest: xrWith(`nodeSources: [{name: eu, matchLabels: {pool: web},
    cluster: {kubeconfigSecretRef: {name: eu-kubeconfig, key: value}, identity: ProviderConfig}}]`),
		},
		"RemoteClusterWithoutSecret": {
			reason:   "A cluster is named by its kubeconfig Secret.",
			manifest: xrWith(`nodeSources: [{name: eu, cluster: {identity: Kubeconfig}}]`),
			wantErr:  "spec.nodeSources[0].cluster.kubeconfigSecretRef: Required value",
		},
		"UnknownIdentity": {
			reason:   "Only the kubeconfig's own credentials or the ProviderConfig's.",
			manifest: xrWith(`nodeSources: [{name: eu, cluster: {kubeconfigSecretRef: {name: eu}, identity: Exec}}]`),
			wantErr:  `spec.nodeSources[0].cluster.identity: Unsupported value: "Exec"`,
		},
		"Instances": {
			reason:   "An instance source by label.",
			manifest: xrWith(`instanceSources: [{name: batch, matchLabels: {goog-k8s-node-pool-name: batch}, pollSeconds: 60}]`),
		},
		"InstancesWithoutLabels": {
			reason:   "Every instance of a project is rarely what an allowlist means.",
			manifest: xrWith(`instanceSources: [{name: batch, matchLabels: {}}]`),
			wantErr:  "spec.instanceSources[0].matchLabels: Invalid value: 0: spec.instanceSources[0].matchLabels in body should have at least 1 properties",
		},
		"PollTooOften": {
			reason:   "A poll under 5 s would spend the project's read quota.",
			manifest: xrWith(`instanceSources: [{name: batch, matchLabels: {pool: batch}, pollSeconds: 1}]`),
			wantErr:  "spec.instanceSources[0].pollSeconds: Invalid value: 1: spec.instanceSources[0].pollSeconds in body should be greater than or equal to 5",
		},
		"AddressSetBoth": {
			reason:   "An AddressSet reads Nodes or instances, not both.",
			manifest: addressSetWith(`{nodes: {}, instances: {matchLabels: {pool: web}}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}`),
			wantErr:  "an AddressSet has exactly one of nodes, instances, nat, services, object and configMap",
		},
		"NATRouter": {
			reason:   "A nat source of one NAT of one router.",
			manifest: xrWith(`natSources: [{name: egress, region: us-central1, router: egress, nat: egress-nat}]`),
		},
		"NATNetwork": {
			reason:   "A nat source of every router of a network in two regions.",
			manifest: xrWith(`natSources: [{name: egress, network: vpc, regions: [us-central1, europe-west1], pollSeconds: 60}]`),
		},
		"NATRouterAndNetwork": {
			reason:   "Exactly one of router and network.",
			manifest: xrWith(`natSources: [{name: egress, region: us-central1, router: egress, network: vpc}]`),
			wantErr:  "a NAT source names exactly one of router and network",
		},
		"NATRouterWithoutRegion": {
			reason:   "A router is regional.",
			manifest: xrWith(`natSources: [{name: egress, router: egress}]`),
			wantErr:  "router needs region, and takes no regions",
		},
		"NATNetworkWithoutRegions": {
			reason:   "A network's routers are listed in the regions named, at least one.",
			manifest: xrWith(`natSources: [{name: egress, network: vpc, regions: []}]`),
			wantErr:  "should have at least 1 items",
		},
		"NATNetworkWithNAT": {
			reason:   "One NAT by name is one router's.",
			manifest: xrWith(`natSources: [{name: egress, network: vpc, regions: [us-central1], nat: egress-nat}]`),
			wantErr:  "network needs regions, and takes neither region nor nat",
		},
		"NATBadRouterName": {
			reason:   "A router name is a GCP name.",
			manifest: xrWith(`natSources: [{name: egress, region: us-central1, router: Egress_1}]`),
			wantErr:  "spec.natSources[0].router: Invalid value",
		},
		"NATBadRegion": {
			reason:   "A region is a GCP region name, not a zone.",
			manifest: xrWith(`natSources: [{name: egress, region: us-central1-a, router: egress}]`),
			wantErr:  "spec.natSources[0].region: Invalid value",
		},
		"NATPollTooOften": {
			reason:   "The same minimum poll as instances.",
			manifest: xrWith(`natSources: [{name: egress, region: us-central1, router: egress, pollSeconds: 1}]`),
			wantErr:  "spec.natSources[0].pollSeconds: Invalid value: 1",
		},
		"AddressSetNAT": {
			reason:   "An AddressSet of a router's NATs.",
			manifest: addressSetWith(`{nat: {region: us-central1, router: egress}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}`),
		},
		"AddressSetNATWithoutConfig": {
			reason:   "Cloud NAT is read with a ProviderConfig's credentials.",
			manifest: addressSetWith(`{nat: {region: us-central1, router: egress}}`),
			wantErr:  "Cloud NAT is read with a ProviderConfig's credentials: set providerConfigRef",
		},
		"AddressSetNATNeither": {
			reason:   "An AddressSet's NAT selector names a router or a network.",
			manifest: addressSetWith(`{nat: {region: us-central1}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}`),
			wantErr:  "a NAT selector names exactly one of router",
		},
		"AddressSetNATAndInstances": {
			reason:   "An AddressSet reads one kind of source.",
			manifest: addressSetWith(`{nat: {region: us-central1, router: egress}, instances: {matchLabels: {pool: web}}, providerConfigRef: {kind: ClusterProviderConfig, name: default}}`),
			wantErr:  "an AddressSet has exactly one of nodes, instances, nat, services, object and configMap",
		},
		"AddressSetInstancesWithoutConfig": {
			reason:   "Instances are listed with a ProviderConfig's credentials.",
			manifest: addressSetWith(`{instances: {matchLabels: {pool: web}}}`),
			wantErr:  "instances are listed with a ProviderConfig's credentials: set providerConfigRef",
		},
		"AddressSetIdentityWithoutConfig": {
			reason:   "Identity ProviderConfig names the ProviderConfig.",
			manifest: addressSetWith(`{nodes: {cluster: {kubeconfigSecretRef: {name: eu}, identity: ProviderConfig}}}`),
			wantErr:  "cluster identity ProviderConfig needs providerConfigRef",
		},
		"AddressSetServices": {
			reason:   "An AddressSet of the LoadBalancer Services of its namespace.",
			manifest: addressSetWith(`{services: {matchLabels: {app: egress-gateway}}, shrinkHoldSeconds: 0}`),
		},
		"AddressSetServicesWithoutLabels": {
			reason:   "Every Service of the namespace is refused rather than guessed at.",
			manifest: addressSetWith(`{services: {matchLabels: {}}}`),
			wantErr:  "spec.services.matchLabels in body should have at least 1 properties",
		},
		"AddressSetObject": {
			reason:   "An AddressSet of one field of a named object of its namespace.",
			manifest: addressSetWith(`{object: {apiVersion: compute.gcp.m.upbound.io/v1beta1, kind: Address, objectName: nat, fieldPath: status.atProvider.address}}`),
		},
		"AddressSetObjectSecret": {
			reason:   "Secrets are never read: their values are credentials.",
			manifest: addressSetWith(`{object: {apiVersion: v1, kind: Secret, objectName: creds, fieldPath: data.token}}`),
			wantErr:  "an object source cannot read Secrets",
		},
		"AddressSetObjectNameAndLabels": {
			reason:   "One object by name, or objects by label, not both.",
			manifest: addressSetWith(`{object: {apiVersion: v1, kind: Service, objectName: a, matchLabels: {app: a}, fieldPath: spec.clusterIP}}`),
			wantErr:  "set exactly one of objectName and matchLabels",
		},
		"AddressSetConfigMapBadKey": {
			reason:   "A ConfigMap key is a ConfigMap key.",
			manifest: addressSetWith(`{configMap: {name: egress, key: "a/b"}}`),
			wantErr:  "spec.configMap.key: Invalid value",
		},
		"AddressSetConfigMapAndNodes": {
			reason:   "An AddressSet reads one kind of source.",
			manifest: addressSetWith(`{configMap: {name: egress, key: cidrs}, nodes: {}}`),
			wantErr:  "an AddressSet has exactly one of nodes, instances, nat, services, object and configMap",
		},
		"AddressSetRemote": {
			reason:   "An AddressSet of another cluster's Nodes.",
			manifest: addressSetWith(`{nodes: {matchLabels: {pool: web}, cluster: {kubeconfigSecretRef: {name: eu}}}}`),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wantAdmission(ctx, t, e.kube, fmt.Sprintf(tc.manifest, strings.ToLower(name)), tc.wantErr, tc.reason)
		})
	}
}

// xrWith is an IPAllowlist manifest (its name a %s) with sources.
func xrWith(sources string) string {
	return "apiVersion: platform.armorplane.io/v1alpha1\nkind: IPAllowlist\nmetadata: {name: %s, namespace: default}\n" +
		"spec:\n  policy: {name: web}\n  priorityRange: {first: 1000, last: 1009}\n  " + sources + "\n"
}

// addressSetWith is an AddressSet manifest (its name a %s) with spec.
func addressSetWith(spec string) string {
	return "apiVersion: cloudarmor.armorplane.io/v1alpha1\nkind: AddressSet\nmetadata: {name: %s, namespace: default}\nspec: " + spec + "\n"
}
