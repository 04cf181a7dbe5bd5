#!/usr/bin/env bash
# Builds every Crossplane package of this repository into _output/xpkg/ with the
# crossplane CLI (v2.5.0, built once by cluster/toolchain/build.sh), without Docker.
#
# A package is any folder among package/ and package/*/ holding a crossplane.yaml;
# its kind decides the rest:
#   Provider       runtime image from ./cmd/provider, examples from examples/
#                  (minus examples/allowlist, and examples/tests: cases for
#                  `provider test`, not objects), one package per platform:
#                  _output/xpkg/linux_<arch>/<name>.xpkg
#   Function       runtime image from ./cmd/function, one package per platform
#   Configuration  no image, examples from examples/allowlist: _output/xpkg/<name>.xpkg
# Runtime images come from cluster/images (go-containerregistry) as OCI tarballs in
# _output/images/ and are embedded with --embed-runtime-image-tarball.
#
# Each package is then signed by hack/sign (docs/security.md, "Signed packages and
# SBOM"): beside <name>.xpkg it writes <name>.spdx.json, an SPDX 2.3 SBOM, and
# <name>.cosign/, an OCI layout as `cosign save` writes one: the package image as
# `crossplane xpkg push` uploads it, its cosign signature and the SBOM as a signed
# attestation. With more than one platform, _output/xpkg/<name>.{spdx.json,cosign}
# sign the multi-platform index `crossplane xpkg push -f linux_amd64/<name>.xpkg,...`
# uploads (files in PLATFORMS order). The key is COSIGN_PRIVATE_KEY (its PEM, with
# COSIGN_PASSWORD) when set, else the committed TEST key hack/testdata/cosign-test.key.
#
# Environment: VERSION (default: git describe), PLATFORMS (default
# "linux/amd64 linux/arm64"), CROSSPLANE (default: build.sh crossplane),
# XPKG_OUT and XPKG_IMAGES (default _output/xpkg and _output/images; make
# node-test uses its own, so as not to empty them under a running make test),
# SIGN (default: hack/sign built into the tool cache), XPKG_REPOSITORY (default
# xpkg.crossplane.io/armorplane: the signatures name <it>/<name>),
# COSIGN_PRIVATE_KEY and COSIGN_PASSWORD.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

version=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo v0.0.0-dev)}
platforms=${PLATFORMS:-linux/amd64 linux/arm64}
out=${XPKG_OUT:-_output/xpkg}
images=${XPKG_IMAGES:-_output/images}
crossplane=${CROSSPLANE:-$(cluster/toolchain/build.sh crossplane)}
repository=${XPKG_REPOSITORY:-xpkg.crossplane.io/armorplane}
revision=$(git rev-parse HEAD 2>/dev/null || true)
created=$(git log -1 --format=%cI 2>/dev/null || true)

# The images carry Debian's CA bundle; install it when it is missing and we can.
ca=/etc/ssl/certs/ca-certificates.crt
if [ ! -s "$ca" ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo ">> $ca missing: apt-get install ca-certificates" >&2
  apt-get install -y --no-install-recommends ca-certificates >&2
fi

# The signer: its own module (cosign's dependencies stay out of ours), built once
# per source into the tool cache; the Makefile computes the same path.
signer=${SIGN:-}
if [ -z "$signer" ]; then
  cache=${PROVIDER_CLOUDARMOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor}
  sum=$(cd hack/sign && LC_ALL=C ls go.mod go.sum *.go | grep -v '_test\.go$' | xargs cat | sha256sum | cut -c1-12)
  signer=$cache/bin/sign-$sum/sign
fi
if [ ! -x "$signer" ]; then
  echo ">> building hack/sign into $signer (first time only)" >&2
  (cd hack/sign && CGO_ENABLED=0 go build -trimpath -o "$signer" .)
fi
if [ -n "${COSIGN_PRIVATE_KEY:-}" ]; then
  key=env://COSIGN_PRIVATE_KEY
  echo ">> signing with the key in COSIGN_PRIVATE_KEY" >&2
else
  key=hack/testdata/cosign-test.key
  export COSIGN_PASSWORD=
  echo ">> signing with the TEST key hack/testdata/cosign-test.key (a release sets COSIGN_PRIVATE_KEY and COSIGN_PASSWORD)" >&2
fi
# sign OUT FILE...: OUT.spdx.json and OUT.cosign/ for one package file, or for the
# index of several.
sign() {
  local out=$1; shift
  "$signer" package --key "$key" --version "$version" --repo "$repository/$(basename "$out")" --out "$out" "$@"
}

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
    Provider)      main=./cmd/provider; examples=examples; ignore+=("allowlist/*" "tests/*") ;;
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
    sign "$out/$name" "$out/$name.xpkg"
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
    sign "$out/$plat/$name" "$out/$plat/$name.xpkg"
  done
  files=()
  for p in $platforms; do files+=("$out/${p/\//_}/$name.xpkg"); done
  if [ ${#files[@]} -gt 1 ]; then
    sign "$out/$name" "${files[@]}"
  fi
done
