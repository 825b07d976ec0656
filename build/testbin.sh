#!/usr/bin/env bash
# Builds the test control plane (kube-apiserver, kubectl, etcd) from Go modules into bin/testbin.
# The tools modules under build/testbin pin the versions; a stamp file makes re-runs instant.
# A cold build of kube-apiserver takes ~5-10 min on 2 cores; the Go build cache makes later ones fast.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${TESTBIN_DIR:-$root/bin/testbin}
mkdir -p "$out"
# modversion DIR MODULE: the version DIR's go.mod requires (in a block or on a require line).
modversion() { awk -v m="$2" '($1==m || ($1=="require" && $2==m)) {for (i = 1; i <= NF; i++) if ($i ~ /^v[0-9]/) {print $i; exit}}' "$root/build/testbin/$1/go.mod"; }

# `testbin.sh helm`: only helm (make helm-test), pinned by build/testbin/helm/go.mod, with its
# own stamp so the control plane is neither rebuilt nor needed for it.
if [[ "${1:-}" == helm ]]; then
  helm_version=$(modversion helm helm.sh/helm/v3)
  [[ -n "$helm_version" ]] || { echo "testbin: cannot read the helm version from build/testbin/helm/go.mod" >&2; exit 1; }
  stamp="helm=$helm_version go=$(go env GOVERSION)"
  if [[ -f "$out/.stamp-helm" && "$(cat "$out/.stamp-helm")" == "$stamp" && -x "$out/helm" ]]; then
    echo "testbin: helm up to date in $out ($stamp)"
    exit 0
  fi
  start=$SECONDS
  echo "testbin: building helm $helm_version (first build takes a minute or two; cached afterwards)"
  (cd "$root/build/testbin/helm" && GOWORK=off CGO_ENABLED=0 go build -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=$helm_version" -o "$out/helm.tmp" helm.sh/helm/v3/cmd/helm)
  mv "$out/helm.tmp" "$out/helm"
  echo "$stamp" > "$out/.stamp-helm"
  echo "testbin: helm ready in $((SECONDS - start))s: $("$out/helm" version --short)"
  exit 0
fi
k8s_version=$(modversion apiserver k8s.io/kubernetes)
etcd_version=$(modversion etcd go.etcd.io/etcd/server/v3)
[[ -n "$k8s_version" && -n "$etcd_version" ]] || { echo "testbin: cannot read pinned versions from build/testbin/*/go.mod" >&2; exit 1; }
stamp="kube-apiserver=$k8s_version etcd=$etcd_version go=$(go env GOVERSION)"
if [[ -f "$out/.stamp" && "$(cat "$out/.stamp")" == "$stamp" && -x "$out/kube-apiserver" && -x "$out/etcd" && -x "$out/kubectl" ]]; then
  echo "testbin: up to date in $out ($stamp)"
  exit 0
fi

# build NAME MODULE_DIR PACKAGE LDFLAGS: go build -v prints each package as it compiles; show a count.
build() {
  local name=$1 dir=$2 pkg=$3 ldflags=$4 start=$SECONDS
  echo "testbin: building $name from $pkg (first build takes minutes; cached afterwards)"
  (cd "$root/build/testbin/$dir" && GOWORK=off CGO_ENABLED=0 go build -v -trimpath -ldflags "$ldflags" -o "$out/$name.tmp" "$pkg" 2>&1) |
    awk -v n="$name" '{c++; if (c % 100 == 0) {printf "testbin: %s: %d packages compiled\n", n, c; fflush()}} /^#|\.go:[0-9]+:|^go: / {print; fflush()}'
  [[ -x "$out/$name.tmp" ]] || { echo "testbin: building $name failed" >&2; exit 1; }
  mv "$out/$name.tmp" "$out/$name"
  echo "testbin: $name ready in $((SECONDS - start))s"
}

minor=${k8s_version#v1.}; minor=${minor%%.*}
kver="-X k8s.io/component-base/version.gitVersion=$k8s_version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
build etcd etcd go.etcd.io/etcd/server/v3 "-s -w"
build kube-apiserver apiserver k8s.io/kubernetes/cmd/kube-apiserver "-s -w $kver"
build kubectl apiserver k8s.io/kubernetes/cmd/kubectl "-s -w $kver"
echo "$stamp" > "$out/.stamp"
"$out/kube-apiserver" --version
"$out/etcd" --version | sed -n 1p  # sed reads it all: head could end etcd with SIGPIPE (exit 141 under pipefail)
