#!/usr/bin/env bash
# Builds a pinned tool from its wrapper module under cluster/toolchain/<name>/ into the
# user cache (outside the checkout), keyed by version, and prints the binary's path.
# A second call with the same version reuses the cached binary, so `make tools` is cheap
# after the first run.
#
#   cluster/toolchain/build.sh kube-apiserver   -> k8s.io/kubernetes v1.35.4
#   cluster/toolchain/build.sh kube-controller-manager -> the same module (only its garbage
#                                                  collector runs, for XR deletion)
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

# build NAME VERSION PKG [MODULE]: build PKG from the wrapper module MODULE (default NAME)
# unless already cached.
build() {
  local name=$1 version=$2 pkg=$3 module=${4:-$1}
  local dir="$cache/bin/$name-$version"
  local bin="$dir/$name"
  local ldflags="-s -w"
  # Crossplane core checks each package's spec.crossplane.version constraint
  # against its own version, which its release build stamps; unstamped, every
  # package fails "invalid semantic version". A binary cached before the stamp
  # prints an empty version and is rebuilt.
  if [ "$name" = crossplane-core ]; then
    ldflags="$ldflags -X github.com/crossplane/crossplane-runtime/v2/pkg/version.version=$version"
    if [ -x "$bin" ] && [ "$("$bin" --version 2>/dev/null)" != "$version" ]; then rm -f "$bin"; fi
  fi
  if [ -x "$bin" ]; then echo "$bin"; return 0; fi

  mkdir -p "$dir"
  # Two concurrent `make tools` would otherwise both write $bin.tmp; the second waits and
  # then finds the finished binary.
  if command -v flock >/dev/null 2>&1; then
    exec {lock}>"$dir/.lock"
    flock "$lock"
    if [ -x "$bin" ]; then echo "$bin"; return 0; fi
  fi

  echo ">> building $name $version into $dir (first time only; kube-apiserver takes ~5 min on 2 cores)" >&2
  local work start
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expand $work now: it is local to this function.
  trap "rm -rf '$work'" EXIT
  start=$(date +%s)
  cp "$here/$module/go.mod" "$here/$module/go.sum" "$here/$module/tools.go" "$work/"
  (cd "$work" && GOFLAGS=-mod=mod go build -trimpath -ldflags="$ldflags" -o "$bin.tmp" "$pkg")
  mv "$bin.tmp" "$bin"
  echo ">> built $name $version in $(($(date +%s) - start))s ($(du -h "$bin" | cut -f1))" >&2
  echo "$bin"
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
  assets)         assets ;;
  *) echo "usage: build.sh kube-apiserver|kube-controller-manager|kubectl|etcd|crossplane|crossplane-core|function-auto-ready|argocd|assets" >&2; exit 2 ;;
esac
