#!/usr/bin/env bash
# Builds a pinned tool from its wrapper module under cluster/toolchain/<name>/ into the
# user cache (outside the checkout), keyed by version, and prints the binary's path.
# A second call with the same version reuses the cached binary.
#
#   cluster/toolchain/build.sh kube-apiserver   -> k8s.io/kubernetes v1.35.4
#   cluster/toolchain/build.sh etcd             -> go.etcd.io/etcd/server/v3 v3.6.6
set -euo pipefail

name=${1:?usage: build.sh kube-apiserver|etcd}
here=$(cd "$(dirname "$0")" && pwd)
case "$name" in
  kube-apiserver) version=v1.35.4; pkg=k8s.io/kubernetes/cmd/kube-apiserver ;;
  etcd)           version=v3.6.6;  pkg=go.etcd.io/etcd/server/v3 ;;
  *) echo "build.sh: unknown tool $name" >&2; exit 2 ;;
esac

cache=${PROVIDER_CLOUDARMOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor}
dir="$cache/bin/$name-$version"
bin="$dir/$name"
if [ -x "$bin" ]; then echo "$bin"; exit 0; fi

mkdir -p "$dir"
echo ">> building $name $version into $dir (first time only; kube-apiserver takes ~5 min on 2 cores)" >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/$name/go.mod" "$here/$name/go.sum" "$here/$name/tools.go" "$work/"
(cd "$work" && GOFLAGS=-mod=mod go build -trimpath -ldflags="-s -w" -o "$bin.tmp" "$pkg")
mv "$bin.tmp" "$bin"
echo "$bin"
