#!/usr/bin/env bash
# make verify: formatting, vet and build of every combination of provider tags, tidy modules,
# go.work in sync, the rule that build tags live only in cmd/ccm/provider_*.go, and functions
# of at most 100 lines in providers and common.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
problem() { echo "verify: $*" >&2; fail=1; }

echo "verify: gofmt"
unformatted=$(gofmt -l $(git ls-files -co --exclude-standard '*.go'))
[[ -z "$unformatted" ]] || problem "gofmt needed: $unformatted"

echo "verify: build tags only in cmd/ccm/provider_*.go"
tagged=$(git ls-files -co --exclude-standard '*.go' | grep -v -E '^(cmd/ccm/provider_[a-z0-9]+\.go|build/)' | xargs grep -l '^//go:build' || true)
[[ -z "$tagged" ]] || problem "build tags outside cmd/ccm/provider_*.go: $tagged"
for f in cmd/ccm/provider_*.go; do
  name=$(basename "$f" .go); name=${name#provider_}
  body=$(grep -v -E '^\s*$' "$f" | tr '\n' '|')
  [[ "$body" =~ ^//go:build\ $name\|package\ main\|import\ _\ \"[^\"]+/providers/$name\"\|$ ]] ||
    problem "$f must hold only '//go:build $name', 'package main' and one blank import of providers/$name"
done

providers=($(ls cmd/ccm/provider_*.go | sed -E 's|cmd/ccm/provider_(.*)\.go|\1|' | sort))
n=${#providers[@]}
# Combinations differ only in which provider_*.go blank imports are compiled (checked above),
# so every one is built, run, and must list exactly its providers (a duplicate name or a
# panicking init shows here). vet runs with no tags and with all of them; each provider's own
# code is vetted with its module below. (vet per combination re-analyses every dependency per
# tag set: 16 combinations took over 15 minutes on 2 cores and could find nothing more.)
echo "verify: build and run all $((1 << n)) combinations of: ${providers[*]}"
bin=$(mktemp -d)
trap 'rm -rf "$bin"' EXIT
for ((mask = 0; mask < (1 << n); mask++)); do
  tags=()
  for ((i = 0; i < n; i++)); do (( mask & (1 << i) )) && tags+=("${providers[i]}"); done
  t=$(IFS=,; echo "${tags[*]}")
  if go build -tags "$t" -o "$bin/ccm" ./cmd/ccm; then
    got=$("$bin/ccm" providers 2>/dev/null | tr '\n' ',' | sed 's/,$//' || true)
    [[ "$got" == "$t" ]] || problem "a binary built with tags '$t' lists providers '$got'"
  else
    problem "build failed with tags '$t'"
  fi
done
all=$(IFS=,; echo "${providers[*]}")
go vet ./cmd/... || problem "vet failed with no tags"
go vet -tags "$all" ./cmd/... || problem "vet failed with tags '$all'"

echo "verify: vet every module"
for mod in $(go list -m -f '{{.Dir}}'); do
  (cd "$mod" && go vet ./...) || problem "vet failed in $mod"
done

(cd build/image && GOWORK=off go vet ./...) || problem "vet failed in build/image"

# build/codeshape decides the next check, so its own tests run here (a second or two).
echo "verify: functions of at most 100 lines in providers and common (build/codeshape funclen)"
if (cd build/codeshape && GOWORK=off go vet ./... && GOWORK=off go test -count=1 ./... &&
  GOWORK=off go build -o "$bin/codeshape" .); then
  "$bin/codeshape" funclen -max 100 providers common ||
    problem "functions over 100 lines (listed above; fakes and simulators are not checked, see build/codeshape/README.md)"
else
  problem "vet, tests or build failed in build/codeshape"
fi

echo "verify: go.work lists every module (build/testbin modules stay outside)"
want=$(git ls-files -co --exclude-standard '*go.mod' | grep -v '^build/' | xargs -n1 dirname | sed 's|^|./|' | sort)
have=$(go work edit -json | grep -oE '"DiskPath": "[^"]+"' | cut -d'"' -f4 | sort)
[[ "$want" == "$have" ]] || problem "go.work out of sync: modules [$(echo $want)] but go.work uses [$(echo $have)]"

echo "verify: modules tidy"
for gomod in $(git ls-files -co --exclude-standard '*go.mod'); do
  dir=$(dirname "$gomod")
  (cd "$dir" && GOWORK=off go mod tidy -diff >/dev/null) || problem "$dir: go mod tidy would change go.mod/go.sum (run it there)"
done

echo "verify: GitHub workflows (actionlint, pinned in build/tools/actionlint)"
(cd build/tools/actionlint && GOWORK=off go run github.com/rhysd/actionlint/cmd/actionlint -shellcheck= -pyflakes= \
  $(cd ../../.. && git ls-files -co --exclude-standard '.github/workflows/*.y*ml' | sed 's|^|../../../|')) ||
  problem "actionlint found problems in .github/workflows"

echo "verify: the release's version and charts (build/version.sh, chart pinning)"
(cd build/image && GOWORK=off go run ./cmd/release --check-version="$(bash ../version.sh)") || problem "build/version.sh prints no semantic version"

echo "verify: docs/flags.md up to date"
bash build/flags.sh --check || problem "docs/flags.md is stale (make flags-doc)"

[[ $fail == 0 ]] && echo "verify: OK" || { echo "verify: FAILED" >&2; exit 1; }
