#!/usr/bin/env bash
# Builds a pinned tool from its wrapper module under cluster/toolchain/<name>/ into the
# user cache (outside the checkout), keyed by version, and prints the binary's path.
# A second call with the same version reuses the cached binary, so `make tools` is cheap
# after the first run.
#
#   cluster/toolchain/build.sh kube-apiserver   -> k8s.io/kubernetes v1.35.4
#   cluster/toolchain/build.sh kube-controller-manager -> the same module (the real node's
#                                                  controller manager)
#   cluster/toolchain/build.sh kubectl          -> the same module (the hints `make run` prints)
#   cluster/toolchain/build.sh etcd             -> go.etcd.io/etcd/server/v3 v3.6.6
#   cluster/toolchain/build.sh crossplane       -> github.com/crossplane/cli/v2 v2.5.0 (the
#                                                  `crossplane` CLI: render, validate, xpkg)
#   cluster/toolchain/build.sh crossplane-core  -> github.com/crossplane/crossplane/v2 v2.4.0 (the core
#                                                  binary: `crossplane render --crossplane-binary`)
#   cluster/toolchain/build.sh function-auto-ready -> github.com/crossplane-contrib/function-auto-ready
#                                                  v0.5.0 (run locally by the render tests)
#   cluster/toolchain/build.sh argocd           -> github.com/argoproj/argo-cd/v3 v3.1.0 (one binary for
#                                                  every component, picked by ARGOCD_BINARY_NAME; the
#                                                  gitops suite runs it; ~5 min cold on 2 cores)
#   cluster/toolchain/build.sh kube-node        -> kubelet, kube-scheduler and kube-proxy from the
#                                                  kube-apiserver module, in one go build (they
#                                                  share most packages); prints three paths
#   cluster/toolchain/build.sh coredns          -> github.com/coredns/coredns v1.12.4 with the
#                                                  plugins errors, health, ready, kubernetes only
#   cluster/toolchain/build.sh helm             -> helm.sh/helm/v3 v3.20.2 (the helm CLI)
#   cluster/toolchain/build.sh node-debs        -> containerd, runc, the CNI plugins, iptables,
#                                                  conntrack and nft from pinned Debian packages
#                                                  (apt-get download + dpkg -x, never installed);
#                                                  prints the root they were extracted into
#   cluster/toolchain/build.sh assets           -> builds both, then prints one folder
#                                                  (envtest-v1.35.4-etcd-v3.6.6) holding
#                                                  symlinks to them: the value for
#                                                  KUBEBUILDER_ASSETS (as the Makefile names it)
#
# The cache root is $PROVIDER_CLOUDARMOR_CACHE, else ${XDG_CACHE_HOME:-~/.cache}/provider-cloudarmor.
# test/framework/controlplane resolves the same paths; keep the two in step.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${PROVIDER_CLOUDARMOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor}
kas_version=v1.35.4
etcd_version=v3.6.6
crossplane_version=v2.5.0
crossplane_core_version=v2.4.0
function_auto_ready_version=v0.5.0
argocd_version=v3.1.0
coredns_version=v1.12.4
helm_version=v3.20.2

# Debian bookworm packages of the node, pinned: the cache is keyed by this list.
# The libraries are the ones iptables, conntrack and nft load; extracting them
# too keeps the node independent of what the host has installed.
node_debs=(
  containerd=1.6.20~ds1-1+deb12u3
  runc=1.1.5+ds1-1+deb12u1
  containernetworking-plugins=1.1.1+ds1-3+b5
  iptables=1.8.9-2
  libxtables12=1.8.9-2
  libip4tc2=1.8.9-2
  libip6tc2=1.8.9-2
  libnetfilter-conntrack3=1.0.9-3
  libnfnetlink0=1.0.2-2
  libnftnl11=1.2.4-2
  libmnl0=1.0.4-3
  conntrack=1:1.4.7-1+b2
  nftables=1.0.6-2+deb12u2
  libnftables1=1.0.6-2+deb12u2
  libjansson4=2.14-2
)

# build NAME VERSION PKG [MODULE]: build PKG from the wrapper module MODULE (default NAME)
# unless already cached.
build() {
  local name=$1 version=$2 pkg=$3 module=${4:-$1}
  local dir="$cache/bin/$name-$version"
  local bin="$dir/$name"
  local ldflags="-s -w"
  # Crossplane core checks each package's spec.crossplane.version constraint
  # against its own version, which its release build stamps; unstamped, every
  # package fails "invalid semantic version". The Kubernetes binaries report
  # v0.0.0-master unstamped (the server's /version, which charts' kubeVersion
  # checks). A binary cached before its stamp is rebuilt, and replaced only
  # when the new one is ready, so a suite running it meanwhile keeps working.
  local want=""
  case $name in
    crossplane-core)
      ldflags="$ldflags -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$version"
      want=$version ;;
    kube-*|kubelet)
      ldflags="$ldflags $(kube_ldflags)"
      want="Kubernetes $version" ;;
    kubectl) ldflags="$ldflags $(kube_ldflags)" ;;
    helm) ldflags="$ldflags -X helm.sh/helm/v3/internal/version.version=$version" ;;
  esac
  cached() { [ -x "$bin" ] && { [ -z "$want" ] || [ "$("$bin" --version 2>/dev/null)" = "$want" ]; }; }
  if cached; then echo "$bin"; return 0; fi

  mkdir -p "$dir"
  # Two concurrent `make tools` would otherwise both write $bin.tmp; the second waits and
  # then finds the finished binary.
  if command -v flock >/dev/null 2>&1; then
    exec {lock}>"$dir/.lock"
    flock "$lock"
    if cached; then echo "$bin"; return 0; fi
  fi

  echo ">> building $name $version into $dir (first time only; kube-apiserver takes ~5 min on 2 cores)" >&2
  local work start
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand $work now: it is local to this function.
  trap "rm -rf '$work' '$(building "$name")'" EXIT
  start=$(date +%s)
  cp "$here/$module/go.mod" "$here/$module/go.sum" "$here/$module/"*.go "$work/"
  (cd "$work" && GOFLAGS=-mod=mod go build -trimpath -ldflags="$ldflags" -o "$bin.tmp" "$pkg")
  mv "$bin.tmp" "$bin"
  rm -f "$(building "$name")"
  echo ">> built $name $version in $(($(date +%s) - start))s ($(du -h "$bin" | cut -f1))" >&2
  echo "$bin"
}

# building NAME: marks NAME as being built by this process since now, for
# hack/progress.sh (which `make run` prints while it builds tools), and prints
# the marker's path for removal when done. A marker whose process is gone is
# stale and ignored.
building() {
  local m="$cache/building/${1// /+}"
  mkdir -p "$cache/building"
  echo "$$ $(date +%s)" >"$m"
  echo "$m"
}

# kube_ldflags: the version the binaries report (the Node's kubeletVersion, the
# server's /version); unstamped they say v0.0.0-master+$Format:%H$.
kube_ldflags() {
  local minor=${kas_version#v1.}
  minor=${minor%%.*}
  echo "-X k8s.io/component-base/version.gitVersion=$kas_version -X k8s.io/component-base/version.gitMajor=1" \
    "-X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/client-go/pkg/version.gitVersion=$kas_version"
}

# kube_node: kubelet, kube-scheduler and kube-proxy in one go build, so the
# packages they share compile once; each lands in its own cache folder as if
# built by `build`.
kube_node() {
  local names=(kubelet kube-scheduler kube-proxy) n missing=() pkgs=()
  for n in "${names[@]}"; do
    [ -x "$cache/bin/$n-$kas_version/$n" ] || missing+=("$n")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    local lockdir="$cache/bin/kube-node-$kas_version"
    mkdir -p "$lockdir"
    exec {lock}>"$lockdir/.lock"
    flock "$lock"
    missing=()
    for n in "${names[@]}"; do
      [ -x "$cache/bin/$n-$kas_version/$n" ] || missing+=("$n")
    done
  fi
  if [ ${#missing[@]} -gt 0 ]; then
    for n in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$n"); done
    echo ">> building ${missing[*]} $kas_version (first time only; ~3 min after kube-apiserver, ~17 min cold)" >&2
    local work start
    work=$(mktemp -d)
    # shellcheck disable=SC2064 # expand $work now: it is local to this function.
    trap "rm -rf '$work' '$(building "${missing[*]}")'" EXIT
    start=$(date +%s)
    cp "$here/kube-apiserver/go.mod" "$here/kube-apiserver/go.sum" "$here/kube-apiserver/"*.go "$work/"
    mkdir "$work/out"
    (cd "$work" && GOFLAGS=-mod=mod go build -trimpath -ldflags="-s -w $(kube_ldflags)" -o "$work/out/" "${pkgs[@]}")
    for n in "${missing[@]}"; do
      mkdir -p "$cache/bin/$n-$kas_version"
      mv "$work/out/$n" "$cache/bin/$n-$kas_version/$n"
    done
    rm -f "$(building "${missing[*]}")"
    echo ">> built ${missing[*]} $kas_version in $(($(date +%s) - start))s" >&2
  fi
  for n in "${names[@]}"; do echo "$cache/bin/$n-$kas_version/$n"; done
}

# node_debs: download the pinned packages with apt-get (which needs the package
# lists: `apt-get update`) and extract them with dpkg -x into one root. Nothing
# is installed on the host.
node_debs_root() {
  local key dir
  key=$(printf '%s\n' "${node_debs[@]}" | sha256sum | cut -c1-12)
  dir="$cache/node-debs-$key"
  if [ -f "$dir/.done" ]; then echo "$dir/root"; return 0; fi
  mkdir -p "$dir"
  exec {lock}>"$dir/.lock"
  flock "$lock"
  if [ -f "$dir/.done" ]; then echo "$dir/root"; return 0; fi
  echo ">> fetching ${#node_debs[@]} Debian packages into $dir (first time only)" >&2
  # shellcheck disable=SC2064 # expand now.
  trap "rm -f '$(building node-debs)'" EXIT
  rm -rf "$dir/debs" "$dir/root"
  mkdir -p "$dir/debs" "$dir/root"
  # As root, apt-get drops to the _apt user to download; root keeps it writing
  # into a folder only root may own.
  if ! (cd "$dir/debs" && apt-get download -o APT::Sandbox::User=root "${node_debs[@]}" >/dev/null); then
    echo "apt-get download failed: run 'apt-get update' (the package lists are missing or stale) and retry" >&2
    exit 1
  fi
  local deb
  for deb in "$dir/debs"/*.deb; do dpkg -x "$deb" "$dir/root"; done
  touch "$dir/.done"
  rm -f "$(building node-debs)"
  echo "$dir/root"
}

# assets: one folder with kube-apiserver and etcd side by side, as envtest expects.
assets() {
  local kas etcd dir
  kas=$(build kube-apiserver "$kas_version" k8s.io/kubernetes/cmd/kube-apiserver)
  etcd=$(build etcd "$etcd_version" go.etcd.io/etcd/server/v3)
  dir="$cache/envtest-$kas_version-etcd-$etcd_version"
  mkdir -p "$dir"
  ln -sfn "$kas" "$dir/kube-apiserver"
  ln -sfn "$etcd" "$dir/etcd"
  echo "$dir"
}

case "${1:-}" in
  kube-apiserver) build kube-apiserver "$kas_version" k8s.io/kubernetes/cmd/kube-apiserver ;;
  kube-controller-manager) build kube-controller-manager "$kas_version" k8s.io/kubernetes/cmd/kube-controller-manager kube-apiserver ;;
  kubectl)        build kubectl "$kas_version" k8s.io/kubernetes/cmd/kubectl kube-apiserver ;;
  etcd)           build etcd "$etcd_version" go.etcd.io/etcd/server/v3 ;;
  crossplane)     build crossplane "$crossplane_version" github.com/crossplane/cli/v2/cmd/crossplane ;;
  crossplane-core) build crossplane-core "$crossplane_core_version" github.com/crossplane/crossplane/v2/cmd/crossplane ;;
  function-auto-ready) build function-auto-ready "$function_auto_ready_version" github.com/crossplane/function-auto-ready ;;
  argocd)         build argocd "$argocd_version" github.com/argoproj/argo-cd/v3/cmd ;;
  kube-node)      kube_node ;;
  coredns)        build coredns "$coredns_version" coredns ;;
  helm)           build helm "$helm_version" helm.sh/helm/v3/cmd/helm ;;
  node-debs)      node_debs_root ;;
  assets)         assets ;;
  *) echo "usage: build.sh kube-apiserver|kube-controller-manager|kubectl|etcd|crossplane|crossplane-core|function-auto-ready|argocd|kube-node|coredns|helm|node-debs|assets" >&2; exit 2 ;;
esac
