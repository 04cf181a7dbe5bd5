package v1beta1

import (
	"reflect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

// Credential sources beyond the ones crossplane-runtime defines.
const (
	// CredentialsSourceImpersonateServiceAccount impersonates a Google service
	// account, starting from Application Default Credentials.
	CredentialsSourceImpersonateServiceAccount xpv2.CredentialsSource = "ImpersonateServiceAccount"

	// CredentialsSourceAccessToken uses an OAuth2 access token read from a
	// Secret as a bearer token. Useful for short-lived tokens and the emulator.
	CredentialsSourceAccessToken xpv2.CredentialsSource = "AccessToken"
)

// ImpersonateServiceAccountSpec names the service account to impersonate.
type ImpersonateServiceAccountSpec struct {
	// Name is the email of the service account to impersonate, for example
	// cloud-armor@my-project.iam.gserviceaccount.com.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
}

// ProviderConfigSpec is the desired state of a namespaced ProviderConfig.
//
// Only credentials this namespace holds itself (a Secret or an access token
// in a Secret of its own) are admitted: the ambient sources
// (InjectedIdentity, Environment, Filesystem, ImpersonateServiceAccount)
// would let anyone who may create a ProviderConfig in any namespace act with
// the provider pod's own GCP identity. A ClusterProviderConfig, which only
// the platform team can create, keeps every source and can be limited to
// some namespaces with spec.namespaceSelector.
// +kubebuilder:validation:XValidation:rule="self.credentials.source == 'Secret' || self.credentials.source == 'AccessToken'",message="a namespaced ProviderConfig may only use credentials.source Secret or AccessToken, read from its own namespace: the other sources would act with the provider's own GCP identity. Ask your platform team for a ClusterProviderConfig that admits this namespace (spec.namespaceSelector)"
// +kubebuilder:validation:XValidation:rule="has(self.credentials.secretRef)",message="credentials.secretRef is required when credentials.source is Secret or AccessToken"
type ProviderConfigSpec struct {
	// ProjectID is the GCP project that managed resources using this config
	// live in, unless they set spec.forProvider.project.
	// +kubebuilder:validation:MinLength=1
	ProjectID string `json:"projectID"`

	// Credentials used to call GCP.
	Credentials ProviderCredentials `json:"credentials"`

	// Endpoint overrides the Compute API base URL, for example a Private
	// Service Connect endpoint or the local emulator
	// (http://127.0.0.1:8787/compute/v1/). Empty means the public API.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint *string `json:"endpoint,omitempty"`
}

// ProviderCredentials of a namespaced ProviderConfig. The Secret is always
// read from the ProviderConfig's own namespace: there is deliberately no way
// to name another namespace here.
type ProviderCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret;InjectedIdentity;ImpersonateServiceAccount;AccessToken;Environment;Filesystem
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef selects the key of a Secret in this ProviderConfig's namespace
	// that holds a service-account key (Secret) or an access token (AccessToken).
	// +optional
	SecretRef *xpv2.LocalSecretKeySelector `json:"secretRef,omitempty"`

	// Env names an environment variable of the provider that holds a
	// service-account key (Environment).
	// +optional
	Env *xpv2.EnvSelector `json:"env,omitempty"`

	// Fs names a file in the provider's filesystem that holds a
	// service-account key (Filesystem).
	// +optional
	Fs *xpv2.FsSelector `json:"fs,omitempty"`

	// ImpersonateServiceAccount is the service account to impersonate
	// (ImpersonateServiceAccount).
	// +optional
	ImpersonateServiceAccount *ImpersonateServiceAccountSpec `json:"impersonateServiceAccount,omitempty"`
}

// ClusterProviderConfigSpec is the desired state of a ClusterProviderConfig.
// +kubebuilder:validation:XValidation:rule="self.credentials.source != 'Secret' && self.credentials.source != 'AccessToken' || has(self.credentials.secretRef)",message="credentials.secretRef is required when credentials.source is Secret or AccessToken"
// +kubebuilder:validation:XValidation:rule="self.credentials.source != 'ImpersonateServiceAccount' || has(self.credentials.impersonateServiceAccount)",message="credentials.impersonateServiceAccount is required when credentials.source is ImpersonateServiceAccount"
type ClusterProviderConfigSpec struct {
	// ProjectID is the GCP project that managed resources using this config
	// live in, unless they set spec.forProvider.project.
	// +kubebuilder:validation:MinLength=1
	ProjectID string `json:"projectID"`

	// Credentials used to call GCP.
	Credentials ClusterProviderCredentials `json:"credentials"`

	// Endpoint overrides the Compute API base URL, for example a Private
	// Service Connect endpoint or the local emulator
	// (http://127.0.0.1:8787/compute/v1/). Empty means the public API.
	// +optional
	// +kubebuilder:validation:Pattern=`^https?://`
	Endpoint *string `json:"endpoint,omitempty"`

	// NamespaceSelector limits the namespaces whose managed resources may use
	// this config to those whose labels it matches. Unset admits every
	// namespace. Any namespace can name a ClusterProviderConfig, so on a
	// shared cluster set it: a resource in a namespace it does not admit is
	// Synced=False and makes no call to GCP.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`

	// ProjectSettingsNamespaceSelector selects the namespaces whose managed
	// resources may change project-wide settings through this config: a
	// ProjectCloudArmorTier that writes the project's Cloud Armor tier. The
	// tier applies to every policy of the project and decides what GCP
	// bills, so admitting a namespace (namespaceSelector) lets it manage its
	// own policies in the project but not the project itself. Unset, no
	// namespace may; {} selects every namespace the config admits. A
	// namespace must be admitted by namespaceSelector too. Objects that only
	// observe (managementPolicies: [Observe]) need no selection.
	// +optional
	ProjectSettingsNamespaceSelector *metav1.LabelSelector `json:"projectSettingsNamespaceSelector,omitempty"`

	// AllowedProjects are the GCP projects that resources using this config
	// may name in spec.forProvider.project (and an IPAllowlist's instance
	// and NAT sources in spec.instanceSources[].project and
	// spec.natSources[].project). Unset, only projectID: a
	// namespace admitted to manage its own policies cannot reach the other
	// projects this config's identity can read or write. "*" admits every
	// project. A resource naming a project not listed is Synced=False and
	// makes no call to GCP.
	// +optional
	// +listType=set
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:items:Pattern=`^(\*|[a-z][-a-z0-9.:]{4,61}[a-z0-9])$`
	AllowedProjects []string `json:"allowedProjects,omitempty"`

	// AttachmentGrants say which backends the SecurityPolicyAttachments of
	// which namespaces may write through this config. Nothing in GCP ties a
	// backend service or bucket to a namespace, and this config's identity
	// can usually write every backend of the project, so an attachment
	// writes only a target some grant gives its namespace; unset, no
	// namespace may write any (an attachment that only observes,
	// managementPolicies [Observe], needs no grant). A refused attachment is
	// Synced=False, naming the grant it lacks, and makes no call to GCP.
	// A ProviderConfig in the namespace, with its own credentials, needs
	// no grant: GCP's IAM decides what those may write.
	// +optional
	// +listType=atomic
	AttachmentGrants []AttachmentGrant `json:"attachmentGrants,omitempty"`
}

// An AttachmentGrant gives the namespaces its selector matches the backends
// its targets name.
type AttachmentGrant struct {
	// NamespaceSelector selects the namespaces granted the targets; {}
	// selects every namespace the config admits. A namespace must be
	// admitted by spec.namespaceSelector too.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// Targets are the backends granted.
	// +kubebuilder:validation:MinItems=1
	// +listType=atomic
	Targets []AttachmentGrantTarget `json:"targets"`
}

// An AttachmentGrantTarget names backends of one kind by name pattern, in
// every project the config lets the namespace name.
type AttachmentGrantTarget struct {
	// Kind of the backends: BackendService (global or regional) or
	// BackendBucket.
	// +kubebuilder:validation:Enum=BackendService;BackendBucket
	Kind string `json:"kind"`

	// Names are patterns of backend names: * matches any run of
	// characters, ? one character; "web-*" grants web-frontend and
	// web-api, "*" every backend of the kind.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:items:Pattern=`^[-a-z0-9*?]{1,63}$`
	// +listType=atomic
	Names []string `json:"names"`

	// Regions limits a BackendService grant to regional backend services
	// of these regions; "global" names the global ones. Unset grants both.
	// +optional
	// +listType=atomic
	Regions []string `json:"regions,omitempty"`
}

// ClusterProviderCredentials of a ClusterProviderConfig, which may name a
// Secret in any namespace.
type ClusterProviderCredentials struct {
	// Source of the credentials.
	// +kubebuilder:validation:Enum=Secret;InjectedIdentity;ImpersonateServiceAccount;AccessToken;Environment;Filesystem
	Source xpv2.CredentialsSource `json:"source"`

	// SecretRef selects the key of a Secret that holds a service-account key
	// (Secret) or an access token (AccessToken).
	// +optional
	SecretRef *xpv2.SecretKeySelector `json:"secretRef,omitempty"`

	// Env names an environment variable of the provider that holds a
	// service-account key (Environment).
	// +optional
	Env *xpv2.EnvSelector `json:"env,omitempty"`

	// Fs names a file in the provider's filesystem that holds a
	// service-account key (Filesystem).
	// +optional
	Fs *xpv2.FsSelector `json:"fs,omitempty"`

	// ImpersonateServiceAccount is the service account to impersonate
	// (ImpersonateServiceAccount).
	// +optional
	ImpersonateServiceAccount *ImpersonateServiceAccountSpec `json:"impersonateServiceAccount,omitempty"`
}

// A ProviderConfigStatus is the observed state of a ProviderConfig.
type ProviderConfigStatus struct {
	xpv2.ProviderConfigStatus `json:",inline"`
}

// +kubebuilder:object:root=true

// A ProviderConfig configures how managed resources in its namespace reach GCP.
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="PROJECT",type="string",JSONPath=".spec.projectID"
// +kubebuilder:printcolumn:name="SOURCE",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Namespaced,categories={crossplane,provider,cloudarmor}
type ProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ProviderConfigSpec   `json:"spec"`
	Status ProviderConfigStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ProviderConfigList contains a list of ProviderConfig.
type ProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ProviderConfig `json:"items"`
}

// +kubebuilder:object:root=true

// A ClusterProviderConfig configures how managed resources in any namespace
// reach GCP.
// +kubebuilder:subresource:status
// +kubebuilder:printcolumn:name="PROJECT",type="string",JSONPath=".spec.projectID"
// +kubebuilder:printcolumn:name="SOURCE",type="string",JSONPath=".spec.credentials.source"
// +kubebuilder:printcolumn:name="USERS",type="integer",JSONPath=".status.users"
// +kubebuilder:printcolumn:name="AGE",type="date",JSONPath=".metadata.creationTimestamp"
// +kubebuilder:resource:scope=Cluster,categories={crossplane,provider,cloudarmor}
type ClusterProviderConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ClusterProviderConfigSpec `json:"spec"`
	Status ProviderConfigStatus      `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// ClusterProviderConfigList contains a list of ClusterProviderConfig.
type ClusterProviderConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterProviderConfig `json:"items"`
}

// ProviderConfig type metadata.
var (
	ProviderConfigKind             = reflect.TypeOf(ProviderConfig{}).Name()
	ProviderConfigGroupKind        = schema.GroupKind{Group: Group, Kind: ProviderConfigKind}.String()
	ProviderConfigKindAPIVersion   = ProviderConfigKind + "." + SchemeGroupVersion.String()
	ProviderConfigGroupVersionKind = SchemeGroupVersion.WithKind(ProviderConfigKind)
)

// ClusterProviderConfig type metadata.
var (
	ClusterProviderConfigKind             = reflect.TypeOf(ClusterProviderConfig{}).Name()
	ClusterProviderConfigGroupKind        = schema.GroupKind{Group: Group, Kind: ClusterProviderConfigKind}.String()
	ClusterProviderConfigKindAPIVersion   = ClusterProviderConfigKind + "." + SchemeGroupVersion.String()
	ClusterProviderConfigGroupVersionKind = SchemeGroupVersion.WithKind(ClusterProviderConfigKind)
)

func init() {
	SchemeBuilder.Register(&ProviderConfig{}, &ProviderConfigList{})
	SchemeBuilder.Register(&ClusterProviderConfig{}, &ClusterProviderConfigList{})
}
