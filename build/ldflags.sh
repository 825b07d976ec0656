#!/usr/bin/env bash
# Prints the -ldflags every ccm build uses (the Makefile, build/flags.sh, the Dockerfile):
# ccm's own version in github.com/ccm-project/ccm/common/version, and in
# k8s.io/component-base/version the version of the Kubernetes libraries ccm is built with
# (component-base derives the Kubernetes version it emulates, and so which log formats and
# feature gates it accepts, from that stamp). VERSION overrides ccm's version.
set -euo pipefail
cd "$(dirname "$0")/.."
version=${VERSION:-$(bash build/version.sh)}
commit=$(git rev-parse HEAD 2>/dev/null || true)
tree=clean
if ! git rev-parse HEAD >/dev/null 2>&1; then tree=unknown; elif [[ -n "$(git status --porcelain 2>/dev/null)" ]]; then tree=dirty; fi
# The build date is SOURCE_DATE_EPOCH's when set (make release sets the commit's), so a release
# rebuilt from the same commit gives the same binaries and image digests.
if [[ -n "${SOURCE_DATE_EPOCH:-}" ]]; then built=$(date -u -d "@$SOURCE_DATE_EPOCH" +%Y-%m-%dT%H:%M:%SZ); else built=$(date -u +%Y-%m-%dT%H:%M:%SZ); fi
# k8s.io/component-base v0.X.Y is Kubernetes v1.X.Y.
lib=$(awk '$1=="k8s.io/component-base" {print $2; exit}' cmd/go.mod)
[[ "$lib" =~ ^v0\.([0-9]+)\.([0-9]+)$ ]] || { echo "ldflags: cannot read k8s.io/component-base's version from cmd/go.mod (got '$lib')" >&2; exit 1; }
kube="v1.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
v=github.com/ccm-project/ccm/common/version
k=k8s.io/component-base/version
echo "-s -w -X $v.gitVersion=$version -X $v.gitCommit=$commit -X $v.gitTreeState=$tree -X $v.buildDate=$built" \
  "-X $k.gitVersion=$kube -X $k.gitMajor=1 -X $k.gitMinor=${BASH_REMATCH[1]}"
