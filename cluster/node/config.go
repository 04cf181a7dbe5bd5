package node

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Addresses and ports. The node's own ports live in its network namespace and
// cannot collide with the host's; only the two host loopback ports can.
const (
	// NodeIP is the pods' bridge gateway inside the node's network namespace:
	// the kubelet refuses a loopback node IP, and there is no other link.
	NodeIP      = "10.244.0.1"
	podCIDR     = "10.244.0.0/24"
	serviceCIDR = "10.96.0.0/24"
	// serviceAPIIP is the kubernetes Service; dnsIP the kube-dns Service.
	serviceAPIIP = "10.96.0.1"
	dnsIP        = "10.96.0.10"
	bridge       = "nodebr0"

	// APIPort is the API server's port inside the node and on host loopback.
	// The ports the host listens on are below Linux's ephemeral range
	// (32768-60999): in it, a busy machine's outgoing connection can hold
	// the port as its source (a node once failed to start with 35000 taken
	// by one, which had gone a second later).
	APIPort = 26443
	// RegistryPort is the registry's port on NodeIP inside the node and on
	// host loopback.
	RegistryPort = 25000
	etcdPort     = 32379
	etcdPeerPort = 32380
)

// RegistryHost is how pods and containerd name the registry.
var RegistryHost = fmt.Sprintf("%s:%d", NodeIP, RegistryPort)

// layout is where a run keeps its files, all under one work directory.
type layout struct{ dir string }

func (l layout) p(elem ...string) string { return filepath.Join(append([]string{l.dir}, elem...)...) }

// identity is a token-file user and the kubeconfig that authenticates as it.
type identity struct {
	file, user string
	groups     []string
}

var identities = []identity{
	{"admin", "admin", []string{"system:masters"}},
	{"kubelet", "system:node:node-0", []string{"system:nodes"}},
	{"controller-manager", "system:kube-controller-manager", nil},
	{"scheduler", "system:kube-scheduler", nil},
	{"proxy", "system:kube-proxy", nil},
}

// writeConfigs writes the token file, one kubeconfig per identity (server
// on the node's loopback, or the host's for admin.host), and the configs of
// containerd, CNI, the kubelet and kube-proxy.
func writeConfigs(l layout, debs string) error {
	var tokens strings.Builder
	for i, id := range identities {
		t := token()
		fmt.Fprintf(&tokens, "%s,%s,%d,%q\n", t, id.user, 1000+i, strings.Join(id.groups, ","))
		// The host reaches the API server through the loopback forwarder on the
		// same port, so one kubeconfig serves both sides.
		if err := writeKubeconfig(l.p(id.file+".kubeconfig"), l.p("pki/ca.crt"), t); err != nil {
			return err
		}
	}
	files := map[string]string{
		"pki/tokens.csv":             tokens.String(),
		"resolv.conf":                resolvConf,
		"containerd/config.toml":     containerdConfig(l, debs),
		"cni/net.d/10-node.conflist": cniConfig(l),
		"kubelet-config.yaml":        kubeletConfig(l),
		"kube-proxy-config.yaml":     kubeProxyConfig(l),
	}
	for _, host := range []string{RegistryHost} {
		files[filepath.Join("certs.d", host, "hosts.toml")] = fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", host, host)
	}
	for name, body := range files {
		p := l.p(name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			return err
		}
	}
	return nil
}

// resolvConf is the node's /etc/resolv.conf and the kubelet's resolvConf: no
// upstream server, so nothing on the node or in a pod resolves a name outside
// the cluster. Pods with the default DNS policy get the cluster's DNS from the
// kubelet's clusterDNS instead.
const resolvConf = "# provider-cloudarmor node: no upstream DNS; nothing resolves outside the cluster.\nnameserver 127.0.0.1\noptions ndots:1 timeout:1 attempts:1\n"

func writeKubeconfig(path, ca, tok string) error {
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: node
  cluster:
    server: https://127.0.0.1:%d
    certificate-authority: %s
users:
- name: user
  user:
    token: %s
contexts:
- name: node
  context: {cluster: node, user: user}
current-context: node
`, APIPort, ca, tok)
	return os.WriteFile(path, []byte(cfg), 0o600)
}

func containerdConfig(l layout, debs string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
[grpc]
  address = %[3]q
[ttrpc]
  address = "%[3]s.ttrpc"
[metrics]
  address = ""
[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "%[4]s/pause:3.10"
  enable_selinux = false
  netns_mounts_under_state_dir = true
  # The machine has no CAP_SYS_RESOURCE: lowering a sandbox's oom_score_adj
  # fails runc ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = %[5]q
        SystemdCgroup = false
        Root = %[6]q
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".registry]
    config_path = %[9]q
[plugins."io.containerd.internal.v1.opt"]
  path = %[10]q
`, l.p("containerd/root"), l.p("containerd/state"), l.p("containerd/containerd.sock"), RegistryHost,
		filepath.Join(debs, "usr/sbin/runc"), l.p("containerd/runc"), filepath.Join(debs, "usr/lib/cni"),
		l.p("cni/net.d"), l.p("certs.d"), l.p("containerd/opt"))
}

func cniConfig(l layout) string {
	return fmt.Sprintf(`{"cniVersion":"0.4.0","name":"node","plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","dataDir":%q,
          "ranges":[[{"subnet":%q,"gateway":%q}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"loopback"}]}
`, bridge, l.p("cni/ipam"), podCIDR, NodeIP)
}

func kubeletConfig(l layout) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupsPerQOS: false
enforceNodeAllocatable: []
failSwapOn: false
address: %[1]s
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication: {anonymous: {enabled: false}, webhook: {enabled: true}, x509: {clientCAFile: %[2]s}}
authorization: {mode: Webhook}
containerRuntimeEndpoint: unix://%[3]s
imageServiceEndpoint: unix://%[3]s
podLogsDir: %[4]s
clusterDomain: cluster.local
clusterDNS: [%[5]q]
resolvConf: %[6]s
evictionHard: {memory.available: "50Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
volumePluginDir: %[7]s
`, NodeIP, l.p("pki/ca.crt"), l.p("containerd/containerd.sock"), l.p("pod-logs"), dnsIP, l.p("resolv.conf"), l.p("flexvolume"))
}

func kubeProxyConfig(l layout) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: iptables
clientConnection: {kubeconfig: %[1]s}
hostnameOverride: node-0
bindAddress: %[2]s
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: %[3]s
nodePortAddresses: ["%[2]s/32"]
conntrack: {maxPerCore: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
iptables: {localhostNodePorts: false}
`, l.p("proxy.kubeconfig"), NodeIP, podCIDR)
}
