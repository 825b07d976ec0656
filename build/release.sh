#!/usr/bin/env bash
# make release: builds ccm per provider for every platform and assembles the release with
# build/image/cmd/release (multi-arch image index, SBOM and pinned chart per provider, pushed to
# RELEASE_REGISTRY), then artefacts.txt and SHA256SUMS in RELEASE_OUT.
#
#   RELEASE_REGISTRY  where images and charts go, e.g. ghcr.io/ccm-project (required)
#   RELEASE_PUSH      false writes everything locally and pushes nothing (default true)
#   VERSION           default: build/version.sh (the git tag at a tagged commit)
#   RELEASE_PROVIDERS default: every cmd/ccm/provider_*.go (comma-separated)
#   RELEASE_PLATFORMS default: linux/amd64,linux/arm64
#   RELEASE_OUT       default: bin/release/$VERSION
#   HELM              default: bin/testbin/helm (built by build/testbin.sh helm)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
: "${RELEASE_REGISTRY:?set RELEASE_REGISTRY, e.g. ghcr.io/ccm-project (RELEASE_PUSH=false to push nothing)}"
version=${VERSION:-$(bash build/version.sh)}
providers=${RELEASE_PROVIDERS:-$(ls cmd/ccm/provider_*.go | sed 's|.*/provider_||; s|\.go$||' | paste -sd,)}
platforms=${RELEASE_PLATFORMS:-linux/amd64,linux/arm64}
out=${RELEASE_OUT:-$root/bin/release/$version}
helm=${HELM:-}
if [[ -z "$helm" ]]; then
  bash build/testbin.sh helm
  helm=$root/bin/testbin/helm
fi
# Builds from one commit are the same byte for byte: file times and the build date are the
# commit's.
export SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
ldflags=$(VERSION=$version bash build/ldflags.sh)
start=$SECONDS
rm -rf "$out"
mkdir -p "$out/bin"
for p in ${providers//,/ }; do
  for plat in ${platforms//,/ }; do
    goos=${plat%/*} goarch=${plat#*/}
    echo "release: building ccm-$p for $plat"
    CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath -ldflags "$ldflags" -tags "$p" \
      -o "$out/bin/ccm-$p-$goos-$goarch" ./cmd/ccm
  done
done
echo "release: binaries built in $((SECONDS - start))s"
cd build/image
GOWORK=off go run ./cmd/release --version="$version" --providers="$providers" --platforms="$platforms" \
  --bin-dir="$out/bin" --charts="$root/deploy/charts" --out="$out" --registry="$RELEASE_REGISTRY" \
  --push="${RELEASE_PUSH:-true}" --helm="$helm" --created="$SOURCE_DATE_EPOCH"
echo "release: done in $((SECONDS - start))s"
