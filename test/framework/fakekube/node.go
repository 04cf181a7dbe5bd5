package fakekube

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Placeholders in a cluster's Node template, replaced per Node and per
// write. Each is a whole JSON string's content, so no escaping applies.
const (
	phName     = "@NAME@"
	phInternal = "@INTERNAL@"
	phExternal = "@EXTERNAL@"
	phZone     = "@ZONE@"
	phUID      = "@UID@"
	phRV       = "@RV@"
	phBeat     = "@BEAT@"
	phPodCIDR  = "@PODCIDR@"
)

// beatSentinel is the heartbeat time written into the template, replaced by
// phBeat after marshalling (metav1.Time cannot hold a placeholder).
var beatSentinel = time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC)

// zones are the zones a cluster's Nodes spread over, as a regional GKE
// cluster's do.
var zones = []string{"europe-west1-b", "europe-west1-c", "europe-west1-d"}

// nodeTemplate is a GKE Node of cluster i as JSON, with placeholders: about
// 25 labels, the six conditions a GKE kubelet and node-problem-detector
// report, 30 images with their sizes, three addresses, capacity,
// allocatable and nodeInfo. About 10 KB, as a real one.
func nodeTemplate(cluster int) ([]byte, error) {
	pool := "default-pool"
	cl := fmt.Sprintf("fleet-%d", cluster)
	labels := map[string]string{
		"beta.kubernetes.io/arch":                      "amd64",
		"beta.kubernetes.io/instance-type":             "e2-standard-4",
		"beta.kubernetes.io/os":                        "linux",
		"cloud.google.com/gke-boot-disk":               "pd-balanced",
		"cloud.google.com/gke-container-runtime":       "containerd",
		"cloud.google.com/gke-cpu-scaling-level":       "4",
		"cloud.google.com/gke-logging-variant":         "DEFAULT",
		"cloud.google.com/gke-max-pods-per-node":       "110",
		"cloud.google.com/gke-memory-gb-scaling-level": "16",
		"cloud.google.com/gke-nodepool":                pool,
		"cloud.google.com/gke-os-distribution":         "cos",
		"cloud.google.com/gke-provisioning":            "standard",
		"cloud.google.com/gke-stack-type":              "IPV4",
		"cloud.google.com/machine-family":              "e2",
		"cloud.google.com/private-node":                "false",
		"failure-domain.beta.kubernetes.io/region":     "europe-west1",
		"failure-domain.beta.kubernetes.io/zone":       phZone,
		"iam.gke.io/gke-metadata-server-enabled":       "true",
		"kubernetes.io/arch":                           "amd64",
		"kubernetes.io/hostname":                       phName,
		"kubernetes.io/os":                             "linux",
		"node.kubernetes.io/instance-type":             "e2-standard-4",
		"node.kubernetes.io/masq-agent-ds-ready":       "true",
		"topology.gke.io/zone":                         phZone,
		"topology.kubernetes.io/region":                "europe-west1",
		"topology.kubernetes.io/zone":                  phZone,
	}
	beat := metav1.NewTime(beatSentinel)
	since := metav1.NewTime(time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC))
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastHeartbeatTime: beat, LastTransitionTime: since, Reason: reason, Message: msg}
	}
	res := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("4"),
		corev1.ResourceMemory:           resource.MustParse("16393216Ki"),
		corev1.ResourceEphemeralStorage: resource.MustParse("98831908Ki"),
		corev1.ResourcePods:             resource.MustParse("110"),
		"attachable-volumes-gce-pd":     resource.MustParse("127"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	alloc := corev1.ResourceList{
		corev1.ResourceCPU:              resource.MustParse("3920m"),
		corev1.ResourceMemory:           resource.MustParse("13424128Ki"),
		corev1.ResourceEphemeralStorage: resource.MustParse("47060071478"),
		corev1.ResourcePods:             resource.MustParse("110"),
		"attachable-volumes-gce-pd":     resource.MustParse("127"),
		"hugepages-1Gi":                 resource.MustParse("0"),
		"hugepages-2Mi":                 resource.MustParse("0"),
	}
	n := &corev1.Node{
		TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: phName, UID: phUID, ResourceVersion: phRV, Labels: labels,
			CreationTimestamp: since,
			Annotations: map[string]string{
				"container.googleapis.com/instance_id":                   phUID,
				"csi.volume.kubernetes.io/nodeid":                        `{"pd.csi.storage.gke.io":"projects/fleet-project/zones/` + phZone + `/instances/` + phName + `"}`,
				"node.alpha.kubernetes.io/ttl":                           "0",
				"node.gke.io/last-applied-node-labels":                   "cloud.google.com/gke-boot-disk=pd-balanced,cloud.google.com/gke-container-runtime=containerd,cloud.google.com/gke-nodepool=" + pool,
				"node.gke.io/last-applied-node-taints":                   "",
				"volumes.kubernetes.io/controller-managed-attach-detach": "true",
			},
		},
		Spec: corev1.NodeSpec{
			PodCIDR: phPodCIDR, PodCIDRs: []string{phPodCIDR},
			ProviderID: "gce://fleet-project/" + phZone + "/" + phName,
		},
		Status: corev1.NodeStatus{
			Capacity: res, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{
				cond("FrequentUnregisterNetDevice", corev1.ConditionFalse, "NoFrequentUnregisterNetDevice", "node is functioning properly"),
				cond("FrequentKubeletRestart", corev1.ConditionFalse, "NoFrequentKubeletRestart", "kubelet is functioning properly"),
				cond("FrequentDockerRestart", corev1.ConditionFalse, "NoFrequentDockerRestart", "docker is functioning properly"),
				cond("FrequentContainerdRestart", corev1.ConditionFalse, "NoFrequentContainerdRestart", "containerd is functioning properly"),
				cond("KernelDeadlock", corev1.ConditionFalse, "KernelHasNoDeadlock", "kernel has no deadlock"),
				cond("ReadonlyFilesystem", corev1.ConditionFalse, "FilesystemIsNotReadOnly", "Filesystem is not read-only"),
				cond("CorruptDockerOverlay2", corev1.ConditionFalse, "NoCorruptDockerOverlay2", "docker overlay2 is functioning properly"),
				cond(corev1.NodeNetworkUnavailable, corev1.ConditionFalse, "RouteCreated", "NodeController create implicit route"),
				cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
				cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
				cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
				cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status. AppArmor enabled"),
			},
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: phInternal},
				{Type: corev1.NodeExternalIP, Address: phExternal},
				{Type: corev1.NodeInternalDNS, Address: phName + "." + phZone + ".c.fleet-project.internal"},
				{Type: corev1.NodeHostName, Address: phName + "." + phZone + ".c.fleet-project.internal"},
			},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID: "3b1e0f6c9d2a4e6f8a0b1c2d3e4f5a6b", SystemUUID: "3b1e0f6c-9d2a-4e6f-8a0b-1c2d3e4f5a6b",
				BootID: "6f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b", KernelVersion: "6.1.112+",
				OSImage: "Container-Optimized OS from Google", ContainerRuntimeVersion: "containerd://1.7.24",
				KubeletVersion: "v1.35.4-gke.1000", KubeProxyVersion: "v1.35.4-gke.1000",
				OperatingSystem: "linux", Architecture: "amd64",
			},
			Images: gkeImages(cl),
		},
	}
	b, err := json.Marshal(n)
	if err != nil {
		return nil, err
	}
	sentinel, _ := json.Marshal(beat)
	return []byte(strings.ReplaceAll(string(b), string(sentinel), `"`+phBeat+`"`)), nil
}

// gkeImages are the 30 images a busy GKE Node holds, with their sizes.
func gkeImages(cluster string) []corev1.ContainerImage {
	names := []string{
		"gke.gcr.io/gke-metrics-agent", "gke.gcr.io/fluent-bit", "gke.gcr.io/fluent-bit-gke-exporter",
		"gke.gcr.io/kube-proxy-amd64", "gke.gcr.io/gcp-compute-persistent-disk-csi-driver", "gke.gcr.io/csi-node-driver-registrar",
		"gke.gcr.io/netd", "gke.gcr.io/ip-masq-agent", "gke.gcr.io/prometheus-to-sd", "gke.gcr.io/gke-metadata-server",
		"gke.gcr.io/k8s-dns-node-cache", "gke.gcr.io/cluster-proportional-autoscaler", "gke.gcr.io/proxy-agent",
		"gke.gcr.io/konnectivity-agent", "gke.gcr.io/event-exporter", "gke.gcr.io/metrics-server",
		"gke.gcr.io/addon-resizer", "gke.gcr.io/pause", "registry.k8s.io/ingress-nginx/controller",
		"docker.io/library/nginx", "docker.io/library/redis", "docker.io/library/postgres",
		"europe-docker.pkg.dev/" + cluster + "/apps/frontend", "europe-docker.pkg.dev/" + cluster + "/apps/api",
		"europe-docker.pkg.dev/" + cluster + "/apps/worker", "europe-docker.pkg.dev/" + cluster + "/apps/cron",
		"quay.io/prometheus/node-exporter", "quay.io/jetstack/cert-manager-controller",
		"ghcr.io/external-secrets/external-secrets", "docker.io/grafana/promtail",
	}
	out := make([]corev1.ContainerImage, 0, len(names))
	for k, name := range names {
		digest := fmt.Sprintf("%064x", uint64(k+1)*0x9e3779b97f4a7c15)
		out = append(out, corev1.ContainerImage{
			Names:     []string{name + "@sha256:" + digest[:64], name + ":v1." + strconv.Itoa(20+k) + ".3-gke.1"},
			SizeBytes: int64(5_000_000 + k*3_700_000),
		})
	}
	return out
}

// nodeName is the name of Node j of cluster i, as GKE names an instance.
func nodeName(i, j int) string { return fmt.Sprintf("gke-fleet-%d-default-pool-%08x", i, j) }
