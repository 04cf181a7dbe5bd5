#!/usr/bin/env bash
# Builds every Crossplane package of this repository into _output/xpkg/ with the
# crossplane CLI (v2.5.0, built once by cluster/toolchain/build.sh), without Docker.
#
# A package is any folder among package/ and package/*/ holding a crossplane.yaml;
# its kind decides the rest:
#   Provider       runtime image from ./cmd/provider, examples from examples/
#                  (minus examples/allowlist), one package per platform:
#                  _output/xpkg/linux_<arch>/<name>.xpkg
#   Function       runtime image from ./cmd/function, one package per platform
#   Configuration  no image, examples from examples/allowlist: _output/xpkg/<name>.xpkg
# Runtime images come from cluster/images (go-containerregistry) as OCI tarballs in
# _output/images/ and are embedded with --embed-runtime-image-tarball.
#
# Environment: VERSION (default: git describe), PLATFORMS (default
# "linux/amd64 linux/arm64"), CROSSPLANE (default: build.sh crossplane),
# XPKG_OUT and XPKG_IMAGES (default _output/xpkg and _output/images; make
# node-test uses its own, so as not to empty them under a running make test).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)}
platforms=${PLATFORMS:-linux/amd64 linux/arm64}
out=${XPKG_OUT:-_output/xpkg}
images=${XPKG_IMAGES:-_output/images}
crossplane=${CROSSPLANE:-$(cluster/toolchain/build.sh crossplane)}
revision=$(git rev-parse HEAD 2>/dev/null || true)
created=$(git log -1 --format=%cI 2>/dev/null || true)

# The images carry Debian's CA bundle; install it when it is missing and we can.
ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$ca" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo ">> $ca missing: apt-get install ca-certificates" >&2
  apt-get install -y --no-install-recommends ca-certificates >&2
fi

# kind_of, name_of FILE: the top-level kind and metadata.name of a crossplane.yaml.
kind_of() { sed -n 's/^kind: *//p' "$1" | head -1; }
name_of() { sed -n '/^metadata:/,/^[^ ]/ s/^  name: *//p' "$1" | head -1; }
# description FILE: the meta.crossplane.io/description block on one line.
description() {
  sed -n '/meta.crossplane.io\/description:/,/^    [a-z]/ { /description:/d; /^    [a-z]/d; p; }' "$1" |
    tr -s ' \n' '  ' | sed 's/^ *//; s/ *$//'
}

rm -rf "$out" "$images"
mkdir -p "$out" "$images"

pkgdirs=()
for d in package package/*/; do
  d=${d%/}
  [ -f "$d/crossplane.yaml" ] && pkgdirs+=("$d")
done

for dir in "${pkgdirs[@]}"; do
  kind=$(kind_of "$dir/crossplane.yaml")
  name=$(name_of "$dir/crossplane.yaml")
  # Nested packages are not part of the package around them.
  ignore=()
  for sub in "${pkgdirs[@]}"; do
    case "$sub" in "$dir"/*) ignore+=("${sub#"$dir"/}/*") ;; esac
  done
  case "$kind" in
    Provider)      main=./cmd/provider; examples=examples; ignore+=("allowlist/*") ;;
    Function)      main=./cmd/function; examples=$out/.no-examples ;;
    Configuration) main=;               examples=examples/allowlist ;;
    *) echo "xpkg: $dir/crossplane.yaml: unknown kind '$kind'" >&2; exit 1 ;;
  esac
  ignore_flag=()
  if [ ${#ignore[@]} -gt 0 ]; then
    ignore_flag=(--ignore "$(IFS=,; echo "${ignore[*]}")")
  fi

  if [ -z "$main" ]; then
    "$crossplane" xpkg build --package-root="$dir" --examples-root="$examples" "${ignore_flag[@]}" \
      --package-file="$out/$name.xpkg"
    echo ">> $out/$name.xpkg ($(du -h "$out/$name.xpkg" | cut -f1))"
    continue
  fi

  go run ./cluster/images --main "$main" --name "$name" --version "$version" \
    --revision "$revision" --created "$created" \
    --description "$(description "$dir/crossplane.yaml")" \
    --platforms "$(echo "$platforms" | tr ' ' ',')" --out "$images"
  for p in $platforms; do
    plat=${p/\//_}
    mkdir -p "$out/$plat"
    "$crossplane" xpkg build --package-root="$dir" --examples-root="$examples" "${ignore_flag[@]}" \
      --embed-runtime-image-tarball="$images/$name-$plat.tar" --package-file="$out/$plat/$name.xpkg"
    echo ">> $out/$plat/$name.xpkg ($(du -h "$out/$plat/$name.xpkg" | cut -f1))"
  done
done
