#!/usr/bin/env bash
# Builds the previous release's packages (provider, function, configuration),
# as that release's own hack/xpkg.sh builds them, for the upgrade-in-place test
# (test/node TestUpgrade). They are cached outside the checkout by commit, so
# `make test` builds them once:
#
#   $PROVIDER_CLOUDARMOR_CACHE/xpkg-<commit>/xpkg/     the packages
#   $PROVIDER_CLOUDARMOR_CACHE/xpkg-<commit>/cluster/rbac/provider-runtime.yaml
#                                                      the grant that release's
#                                                      README applied
#
# Prints the cache folder. Environment: PREVIOUS (default below), PLATFORMS
# (default linux/amd64: the node is linux/amd64 only), CROSSPLANE, SIGN (as
# hack/xpkg.sh).
set -euo pipefail

# The previous release: the last commit whose function composed the rules one
# by one, before the SecurityPolicyAllowlist. Keep it here only.
PREVIOUS=${PREVIOUS:-e751c02}

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache=${PROVIDER_CLOUDARMOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/provider-cloudarmor}
dir=$cache/xpkg-$PREVIOUS

if [ -f "$dir/done" ]; then
  echo "$dir"
  exit 0
fi
if ! git cat-file -e "$PREVIOUS^{commit}" 2>/dev/null; then
  echo "xpkg-previous: this clone lacks commit $PREVIOUS (the previous release the upgrade test installs);" \
    "fetch it (git fetch --unshallow, or fetch the branch that has it)" >&2
  exit 1
fi

tree=$(mktemp -d "${TMPDIR:-/tmp}/provider-cloudarmor-previous-XXXXXX")
trap 'rm -rf "$tree"' EXIT
git archive "$PREVIOUS" | tar -x -C "$tree"

rm -rf "$dir"
mkdir -p "$dir/cluster/rbac"
echo ">> building the packages of $PREVIOUS into $dir (first time only)" >&2
# Not a git checkout: VERSION is given (hack/xpkg.sh stamps no revision).
(cd "$tree" && VERSION=$PREVIOUS PLATFORMS=${PLATFORMS:-linux/amd64} \
  XPKG_OUT="$dir/xpkg" XPKG_IMAGES="$dir/images" hack/xpkg.sh >&2)
cp "$tree/cluster/rbac/provider-runtime.yaml" "$dir/cluster/rbac/"
rm -rf "$dir/images"
git rev-parse "$PREVIOUS^{commit}" >"$dir/done"
echo "$dir"
