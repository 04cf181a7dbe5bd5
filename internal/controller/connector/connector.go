// Package connector turns a managed resource's ProviderConfig or
// ClusterProviderConfig into a GCP client. Every managed resource kind's
// controller shares it, so usage tracking, credential reading and client
// caching behave the same for every kind.
package connector

import (
	"context"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// Error strings.
const (
	errTrackUsage     = "cannot track ProviderConfig usage"
	errNoConfigRef    = "managed resource does not reference a ProviderConfig"
	errFmtUnknownKind = "unsupported providerConfigRef.kind %q: want ProviderConfig or ClusterProviderConfig"
	errGetPC          = "cannot get ProviderConfig"
	errGetCPC         = "cannot get ClusterProviderConfig"
	errNoSecretRef    = "credentials.secretRef is required for this credentials source"
	errFmtGetSecret   = "cannot get credentials Secret %s/%s"
	errFmtNoSecretKey = "credentials Secret %s/%s has no key %q"
	errNoEnv          = "credentials.env is required for source Environment"
	errFmtEmptyEnv    = "environment variable %s is empty"
	errNoFs           = "credentials.fs is required for source Filesystem"
	errReadFile       = "cannot read credentials file"
	errNoImpersonate  = "credentials.impersonateServiceAccount is required for source ImpersonateServiceAccount"
	errBuildClient    = "cannot build GCP client"
	errConnect        = "cannot connect to GCP"
	errOrgClient      = "cannot build the organization policy client"
	errGetNamespace   = "cannot get the managed resource's namespace"
	errNsSelector     = "cannot parse spec.namespaceSelector"

	errFmtNotAdmitted    = "ClusterProviderConfig %q does not admit namespace %q: its spec.namespaceSelector does not match the namespace's labels, so resources here may not use it"
	errFmtNotProjectWide = "ClusterProviderConfig %q does not let namespace %q change project-wide settings such as the project's Cloud Armor tier: its spec.projectSettingsNamespaceSelector is unset or does not match the namespace's labels. Ask your platform team to select this namespace there, or use a ProviderConfig in this namespace with credentials of its own"
	errFmtNotOrgWide     = "an organization-level resource affects every project below its organization, folder or attachment point, so it may only use a ClusterProviderConfig: providerConfigRef names %s %q, which is refused. Ask your platform team for a ClusterProviderConfig"
	errFmtEndpoint       = "ProviderConfig %s/%s sets spec.endpoint %q, which the platform team has not allowed for namespaced ProviderConfigs: every GCP call, with this namespace's token, would go there. Remove it to use GCP's API, or ask your platform team to allow it (provider flag --namespaced-endpoint)"
	errFmtProject        = "%s may not name project %q: its projects are %s. Ask your platform team to add the project to the ClusterProviderConfig's spec.allowedProjects, or use a ProviderConfig in this namespace with credentials of its own"
	errFmtAmbient        = "ProviderConfig %s/%s uses credentials.source %s, which would act with the provider's own GCP identity: a namespaced ProviderConfig may only use Secret or AccessToken (the provider runs without --namespaced-ambient-credentials). Use a ClusterProviderConfig that admits this namespace"
)

// A Connection is what a controller needs to call GCP for one managed resource.
type Connection struct {
	// Client talks to GCP with the config's credentials.
	Client *gcp.Client
	// Project is the config's projectID, used when a resource sets none.
	Project string

	// config names the config in messages; allowed are the projects it
	// lets a resource name (nil: any, a namespaced ProviderConfig's own
	// credentials decide).
	config  string
	allowed []string
}

// ProjectOr returns project when a resource sets it, else the config's, and
// refuses a project the config does not let its resources name, before any
// call to GCP.
func (c *Connection) ProjectOr(project *string) (string, error) {
	p := ptr.Deref(project, c.Project)
	if c.allowed == nil || slices.Contains(c.allowed, p) || slices.Contains(c.allowed, AnyProject) {
		return p, nil
	}
	return "", errors.Errorf(errFmtProject, c.config, p, strings.Join(c.allowed, ", "))
}

// AnyProject in a ClusterProviderConfig's allowedProjects admits every
// project.
const AnyProject = "*"

// A BuildFn builds a GCP client for credentials.
type BuildFn func(ctx context.Context, creds gcp.Credentials) (*gcp.Client, error)

// A Connector resolves ProviderConfigs into cached GCP clients.
type Connector struct {
	kube    client.Reader // cached reads of ProviderConfigs
	secrets client.Reader // uncached reads of Secrets: we must not watch every Secret
	usage   resource.ModernTracker
	clients *gcp.ClientCache
	build   BuildFn
	readEnv func(string) string
	readFs  func(string) ([]byte, error)
	cache   *secretCache // nil reads every time

	// ambient lets namespaced ProviderConfigs use the provider's own
	// identity (InjectedIdentity, Environment, Filesystem,
	// ImpersonateServiceAccount).
	ambient bool
	// endpoints are the origins (scheme://host:port) a namespaced
	// ProviderConfig's spec.endpoint may name.
	endpoints []string
	// grants are what the platform team allowed a credentials JSON to name
	// besides Google's hosts.
	grants gcp.Grants
}

// An Option configures a Connector.
type Option func(*Connector)

// WithNamespacedAmbientCredentials lets namespaced ProviderConfigs use the
// credential sources that act with the provider's own identity. Only for
// clusters with a single tenant: with it, anyone who may write a
// ProviderConfig in any namespace acts as the provider.
func WithNamespacedAmbientCredentials() Option {
	return func(c *Connector) { c.ambient = true }
}

// WithNamespacedEndpoints lets namespaced ProviderConfigs set spec.endpoint
// to a URL of one of origins (scheme://host[:port], e.g. a Private Service
// Connect endpoint or the local emulator). Without it a namespaced
// ProviderConfig may not set one: every GCP call, with the namespace's
// token, would go wherever it names.
func WithNamespacedEndpoints(origins []string) Option {
	return func(c *Connector) { c.endpoints = origins }
}

// WithCredentialGrants lets credentials JSON name what g lists besides
// Google's hosts: the files and URLs external_account credentials of a
// ClusterProviderConfig may read their subject token from, and token
// endpoints. Without it none is accepted.
func WithCredentialGrants(g gcp.Grants) Option {
	return func(c *Connector) { c.grants = g }
}

// New returns a Connector. kube should be the manager's cached client and
// secrets its API reader, so Secrets are read on demand rather than cached
// cluster-wide (which would need list/watch on every Secret).
func New(kube, secrets client.Reader, usage resource.ModernTracker, clients *gcp.ClientCache, build BuildFn, o ...Option) *Connector {
	c := &Connector{kube: kube, secrets: secrets, usage: usage, clients: clients, build: build,
		readEnv: os.Getenv, readFs: os.ReadFile, cache: newSecretCache(SecretTTL)}
	for _, fn := range o {
		fn(c)
	}
	return c
}

// Connect returns a GCP connection for mg:
//  1. reads the ProviderConfig (mg's namespace) or ClusterProviderConfig;
//  2. checks that the config admits mg: a ClusterProviderConfig's
//     namespaceSelector must match mg's namespace, and a namespaced
//     ProviderConfig may not use the provider's own identity;
//  3. records that mg uses its config (blocking the config's deletion), so
//     a namespace a config does not admit cannot block its deletion; not
//     while mg is being deleted;
//  4. reads the credentials; a namespaced ProviderConfig can only name a
//     Secret in its own namespace;
//  5. returns the cached client for those credentials, building it once.
func (c *Connector) Connect(ctx context.Context, mg resource.ModernManaged) (*Connection, error) {
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return nil, errors.New(errNoConfigRef)
	}
	cfg, err := resolve(ctx, c.kube, mg.GetNamespace(), ref)
	if err != nil {
		return nil, err
	}
	if err := c.admit(ctx, cfg, mg.GetNamespace()); err != nil {
		return nil, err
	}
	// A resource on its way out records no new use: it has one from its
	// first reconcile if it ever connected, and in a namespace being deleted
	// the API server refuses to create one, which would keep the resource
	// from deleting what it manages in GCP.
	if mg.GetDeletionTimestamp() == nil {
		if err := c.usage.Track(ctx, mg); err != nil {
			return nil, errors.Wrap(err, errTrackUsage)
		}
	}
	creds, err := c.credentials(ctx, cfg)
	if err != nil {
		return nil, err
	}
	key := gcp.IdentityKey(cfg.uid, strconv.FormatInt(cfg.generation, 10), creds.Hash())
	cl, err := c.clients.Get(ctx, cfg.uid, key, func(ctx context.Context) (*gcp.Client, error) {
		return c.build(ctx, creds)
	})
	if err != nil {
		return nil, errors.Wrap(err, errBuildClient)
	}
	return cfg.connection(cl), nil
}

// ConnectNamespace is Connect for an object of namespace that is not a
// managed resource but reads GCP for one (an AddressSet listing instances
// for its allowlist): the same config, admission and credentials, and no
// usage recorded, which the managed resource that owns the object records.
func (c *Connector) ConnectNamespace(ctx context.Context, namespace string, ref *xpv2.ProviderConfigReference) (*Connection, gcp.Credentials, error) {
	if ref == nil {
		return nil, gcp.Credentials{}, errors.New(errNoConfigRef)
	}
	cfg, err := resolve(ctx, c.kube, namespace, ref)
	if err != nil {
		return nil, gcp.Credentials{}, err
	}
	if err := c.admit(ctx, cfg, namespace); err != nil {
		return nil, gcp.Credentials{}, err
	}
	creds, err := c.credentials(ctx, cfg)
	if err != nil {
		return nil, gcp.Credentials{}, err
	}
	key := gcp.IdentityKey(cfg.uid, strconv.FormatInt(cfg.generation, 10), creds.Hash())
	cl, err := c.clients.Get(ctx, cfg.uid, key, func(ctx context.Context) (*gcp.Client, error) {
		return c.build(ctx, creds)
	})
	if err != nil {
		return nil, gcp.Credentials{}, errors.Wrap(err, errBuildClient)
	}
	return cfg.connection(cl), creds, nil
}

// OrgPolicies connects mg, a resource that changes what every project below
// an organization or folder enforces (an organization policy, its
// association or rule), and returns the client for the organization
// policies of parent: organizations/N or folders/N, or "" for policies known
// by id only, which need no parent to be read or written.
func (c *Connector) OrgPolicies(ctx context.Context, mg resource.ModernManaged, parent string) (gcp.OrgPolicyClient, error) {
	conn, err := c.connectOrganizationWide(ctx, mg)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	policies, err := conn.Client.OrgPolicies(parent)
	if err != nil {
		return nil, errors.Wrap(err, errOrgClient)
	}
	return policies, nil
}

// OrgPolicyConnector is the connector of a kind whose external system is
// the organization policies of the parent parent(cr) names (see
// OrgPolicies): each Connect hands their client to external.
func OrgPolicyConnector[T resource.ModernManaged](c *Connector, parent func(T) string, external func(gcp.OrgPolicyClient) managed.TypedExternalClient[T]) managed.TypedExternalConnector[T] {
	return managed.TypedExternalConnectorFn[T](func(ctx context.Context, cr T) (managed.TypedExternalClient[T], error) {
		policies, err := c.OrgPolicies(ctx, cr, parent(cr))
		if err != nil {
			return nil, err
		}
		return external(policies), nil
	})
}

// connectOrganizationWide is Connect for a resource that changes what every
// project below an organization or folder enforces. Only a
// ClusterProviderConfig may serve one: a namespaced ProviderConfig is
// refused before anything is read, whatever its credentials, so a
// namespace's own config can never reach past its projects. Admission
// refuses the same; this holds if a CRD did not.
func (c *Connector) connectOrganizationWide(ctx context.Context, mg resource.ModernManaged) (*Connection, error) {
	if ref := mg.GetProviderConfigReference(); ref != nil && ref.Kind != v1beta1.ClusterProviderConfigKind {
		return nil, errors.Errorf(errFmtNotOrgWide, ref.Kind, ref.Name)
	}
	return c.Connect(ctx, mg)
}

// AdmitProjectWide checks that mg's config lets it change settings of a
// whole project (the Cloud Armor tier), which every policy of the project
// depends on: a namespaced ProviderConfig does, with the namespace's own
// credentials (GCP decides what they may do); a ClusterProviderConfig only
// for the namespaces its projectSettingsNamespaceSelector selects, so that
// admitting a namespace to manage its own policies in a shared project does
// not let it change the project. Connect still checks the rest.
func (c *Connector) AdmitProjectWide(ctx context.Context, mg resource.ModernManaged) error {
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return errors.New(errNoConfigRef)
	}
	cfg, err := resolve(ctx, c.kube, mg.GetNamespace(), ref)
	if err != nil || cfg.namespace != "" {
		return err
	}
	if cfg.projectWide == nil {
		return errors.Errorf(errFmtNotProjectWide, cfg.name, mg.GetNamespace())
	}
	sel, err := metav1.LabelSelectorAsSelector(cfg.projectWide)
	if err != nil {
		return errors.Wrap(err, errNsSelector)
	}
	ns := &corev1.Namespace{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: mg.GetNamespace()}, ns); err != nil {
		return errors.Wrap(err, errGetNamespace)
	}
	if !sel.Matches(labels.Set(ns.GetLabels())) {
		return errors.Errorf(errFmtNotProjectWide, cfg.name, mg.GetNamespace())
	}
	return nil
}

// admit checks that cfg may serve a managed resource in namespace.
func (c *Connector) admit(ctx context.Context, cfg *config, namespace string) error {
	if cfg.namespace != "" {
		if cfg.endpoint != "" && !endpointAllowed(cfg.endpoint, c.endpoints) {
			return errors.Errorf(errFmtEndpoint, cfg.namespace, cfg.name, cfg.endpoint)
		}
		switch cfg.source {
		case xpv2.CredentialsSourceSecret, v1beta1.CredentialsSourceAccessToken:
			return nil
		}
		if c.ambient {
			return nil
		}
		return errors.Errorf(errFmtAmbient, cfg.namespace, cfg.name, cfg.source)
	}
	if cfg.namespaces == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(cfg.namespaces)
	if err != nil {
		return errors.Wrap(err, errNsSelector)
	}
	ns := &corev1.Namespace{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: namespace}, ns); err != nil {
		return errors.Wrap(err, errGetNamespace)
	}
	if !sel.Matches(labels.Set(ns.GetLabels())) {
		return errors.Errorf(errFmtNotAdmitted, cfg.name, namespace)
	}
	return nil
}

// config is what Connect needs of either kind of ProviderConfig.
type config struct {
	name        string
	namespace   string                // "" for a ClusterProviderConfig
	namespaces  *metav1.LabelSelector // a ClusterProviderConfig's namespaceSelector
	projectWide *metav1.LabelSelector // a ClusterProviderConfig's projectSettingsNamespaceSelector
	uid         string
	generation  int64
	project     string
	projects    []string // a ClusterProviderConfig's allowedProjects; nil: any
	endpoint    string
	source      xpv2.CredentialsSource
	secret      *xpv2.SecretKeySelector
	env         *xpv2.EnvSelector
	fs          *xpv2.FsSelector
	impersonate *v1beta1.ImpersonateServiceAccountSpec
}

// Projects resolves the GCP projects of managed resources as Connect does:
// a resource's own project, else the projectID of the config it references,
// read as Connect reads it. Each config is read once per Projects, so a
// policy with a thousand rules that share a config reads it once. Ownership
// resolves the projects of other objects with it.
type Projects struct {
	kube    client.Reader
	configs map[string]*config // kind/namespace/name
}

// NewProjects returns a Projects reading configs through kube.
func NewProjects(kube client.Reader) *Projects {
	return &Projects{kube: kube, configs: map[string]*config{}}
}

// A ConfigUser is what project resolution needs of a managed resource.
type ConfigUser interface {
	GetNamespace() string
	GetProviderConfigReference() *xpv2.ProviderConfigReference
}

// Of returns the GCP project of mg, whose spec sets project (nil: none).
func (p *Projects) Of(ctx context.Context, mg ConfigUser, project *string) (string, error) {
	if project != nil {
		return *project, nil
	}
	cfg, err := p.config(ctx, mg)
	if err != nil {
		return "", err
	}
	return cfg.project, nil
}

// Admitted reports whether mg's config admits mg's namespace, as Connect
// checks it: a ClusterProviderConfig's namespaceSelector must match the
// namespace's labels; a namespaced ProviderConfig is the namespace's own.
// An object its config does not admit cannot reach GCP, so it may own
// nothing.
func (p *Projects) Admitted(ctx context.Context, mg ConfigUser) (bool, error) {
	cfg, err := p.config(ctx, mg)
	if err != nil {
		return false, err
	}
	if cfg.namespace != "" || cfg.namespaces == nil {
		return true, nil
	}
	sel, err := metav1.LabelSelectorAsSelector(cfg.namespaces)
	if err != nil {
		return false, errors.Wrap(err, errNsSelector)
	}
	ns := &corev1.Namespace{}
	if err := p.kube.Get(ctx, types.NamespacedName{Name: mg.GetNamespace()}, ns); err != nil {
		return false, errors.Wrap(err, errGetNamespace)
	}
	return sel.Matches(labels.Set(ns.GetLabels())), nil
}

// config reads the config mg references, once per Projects.
func (p *Projects) config(ctx context.Context, mg ConfigUser) (*config, error) {
	ref := mg.GetProviderConfigReference()
	if ref == nil {
		return nil, errors.New(errNoConfigRef)
	}
	key := ref.Kind + "/" + ref.Name
	if ref.Kind == v1beta1.ProviderConfigKind {
		key = ref.Kind + "/" + mg.GetNamespace() + "/" + ref.Name
	}
	if cfg, ok := p.configs[key]; ok {
		return cfg, nil
	}
	cfg, err := resolve(ctx, p.kube, mg.GetNamespace(), ref)
	if err != nil {
		return nil, err
	}
	p.configs[key] = cfg
	return cfg, nil
}

// resolve reads the config ref names for a managed resource in namespace.
func resolve(ctx context.Context, kube client.Reader, namespace string, ref *xpv2.ProviderConfigReference) (*config, error) {
	switch ref.Kind {
	case v1beta1.ProviderConfigKind:
		pc := &v1beta1.ProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Namespace: namespace, Name: ref.Name}, pc); err != nil {
			return nil, errors.Wrap(err, errGetPC)
		}
		return fromProviderConfig(pc), nil
	case v1beta1.ClusterProviderConfigKind:
		cpc := &v1beta1.ClusterProviderConfig{}
		if err := kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
			return nil, errors.Wrap(err, errGetCPC)
		}
		return fromClusterProviderConfig(cpc), nil
	default:
		return nil, errors.Errorf(errFmtUnknownKind, ref.Kind)
	}
}

func fromProviderConfig(pc *v1beta1.ProviderConfig) *config {
	s := pc.Spec
	cfg := &config{name: pc.GetName(), namespace: pc.GetNamespace(), uid: string(pc.GetUID()), generation: pc.GetGeneration(), project: s.ProjectID,
		endpoint: ptr.Deref(s.Endpoint, ""), source: s.Credentials.Source, env: s.Credentials.Env,
		fs: s.Credentials.Fs, impersonate: s.Credentials.ImpersonateServiceAccount}
	if s.Credentials.SecretRef != nil {
		// Tenant isolation: the namespace is always the ProviderConfig's own.
		cfg.secret = s.Credentials.SecretRef.ToSecretKeySelector(pc.GetNamespace())
	}
	return cfg
}

func fromClusterProviderConfig(cpc *v1beta1.ClusterProviderConfig) *config {
	s := cpc.Spec
	projects := s.AllowedProjects
	if len(projects) == 0 {
		projects = []string{s.ProjectID}
	}
	return &config{name: cpc.GetName(), namespaces: s.NamespaceSelector, projectWide: s.ProjectSettingsNamespaceSelector, uid: string(cpc.GetUID()), generation: cpc.GetGeneration(), project: s.ProjectID,
		projects: projects, endpoint: ptr.Deref(s.Endpoint, ""), source: s.Credentials.Source, secret: s.Credentials.SecretRef,
		env: s.Credentials.Env, fs: s.Credentials.Fs, impersonate: s.Credentials.ImpersonateServiceAccount}
}

// connection is what Connect returns for cfg and its client.
func (cfg *config) connection(cl *gcp.Client) *Connection {
	name := "ClusterProviderConfig " + strconv.Quote(cfg.name)
	if cfg.namespace != "" {
		name = "ProviderConfig " + cfg.namespace + "/" + cfg.name
	}
	return &Connection{Client: cl, Project: cfg.project, config: name, allowed: cfg.projects}
}

// endpointAllowed reports whether endpoint's origin is one of origins.
func endpointAllowed(endpoint string, origins []string) bool {
	o, ok := origin(endpoint)
	if !ok {
		return false
	}
	for _, a := range origins {
		if ao, ok := origin(a); ok && ao == o {
			return true
		}
	}
	return false
}

// origin returns scheme://host:port of raw, with the scheme's default port
// made explicit, so http://h and http://h:80 are one origin.
func origin(raw string) (string, bool) {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		return "", false
	}
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
	}
	return u.Scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port), true
}

func (c *Connector) credentials(ctx context.Context, cfg *config) (gcp.Credentials, error) {
	creds := gcp.Credentials{Source: gcp.CredentialsSource(cfg.source), Endpoint: cfg.endpoint, Grants: c.grants}
	if cfg.namespace != "" && cfg.source == xpv2.CredentialsSourceSecret {
		// The namespace wrote these bytes: only a service account key of
		// Google's is taken from it (gcp.TrustTenant).
		creds.Trust = gcp.TrustTenant
	}
	var err error
	switch cfg.source {
	case xpv2.CredentialsSourceSecret, v1beta1.CredentialsSourceAccessToken:
		creds.Data, err = c.secretData(ctx, cfg.secret)
	case xpv2.CredentialsSourceEnvironment:
		creds.Data, err = c.envData(cfg.env)
	case xpv2.CredentialsSourceFilesystem:
		creds.Data, err = c.fsData(cfg.fs)
	case v1beta1.CredentialsSourceImpersonateServiceAccount:
		if cfg.impersonate == nil {
			return creds, errors.New(errNoImpersonate)
		}
		creds.ImpersonateServiceAccount = cfg.impersonate.Name
	}
	return creds, err
}

func (c *Connector) secretData(ctx context.Context, ref *xpv2.SecretKeySelector) ([]byte, error) {
	if ref == nil {
		return nil, errors.New(errNoSecretRef)
	}
	key := ref.Namespace + "/" + ref.Name + "/" + ref.Key
	if c.cache != nil {
		if data, ok := c.cache.get(key); ok {
			return data, nil
		}
	}
	s := &corev1.Secret{}
	if err := c.secrets.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, s); err != nil {
		return nil, errors.Wrapf(err, errFmtGetSecret, ref.Namespace, ref.Name)
	}
	data, ok := s.Data[ref.Key]
	if !ok {
		return nil, errors.Errorf(errFmtNoSecretKey, ref.Namespace, ref.Name, ref.Key)
	}
	if c.cache != nil {
		c.cache.put(key, data)
	}
	return data, nil
}

func (c *Connector) envData(sel *xpv2.EnvSelector) ([]byte, error) {
	if sel == nil {
		return nil, errors.New(errNoEnv)
	}
	v := c.readEnv(sel.Name)
	if v == "" {
		return nil, errors.Errorf(errFmtEmptyEnv, sel.Name)
	}
	return []byte(v), nil
}

func (c *Connector) fsData(sel *xpv2.FsSelector) ([]byte, error) {
	if sel == nil {
		return nil, errors.New(errNoFs)
	}
	data, err := c.readFs(sel.Path)
	// The path is the user's own configuration, safe to show; the content is not.
	return data, errors.Wrap(err, errReadFile)
}
