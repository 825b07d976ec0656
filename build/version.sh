#!/usr/bin/env bash
# Prints ccm's version, a semantic version taken from git tags (vMAJOR.MINOR.PATCH):
#   - at a tagged commit: the tag (v0.2.0);
#   - N commits after tag vX.Y.Z: the next patch's pre-release, vX.Y.(Z+1)-dev.N.g<sha>, which
#     sorts after the tag and before the next release, as semantic versions must;
#   - with no tag yet: v0.1.0-dev.g<sha>.
# Every part is valid in an image tag and a Helm chart version ('+' is in neither).
set -euo pipefail
cd "$(dirname "$0")/.."
sha=$(git rev-parse --short=7 HEAD 2>/dev/null || true)
[[ -n "$sha" ]] || { echo "v0.1.0-dev.unknown"; exit 0; }
match='v[0-9]*.[0-9]*.[0-9]*'
if tag=$(git describe --tags --exact-match --match "$match" 2>/dev/null); then
  echo "$tag"
elif desc=$(git describe --tags --long --match "$match" 2>/dev/null) &&
  [[ "$desc" =~ ^v([0-9]+)\.([0-9]+)\.([0-9]+)-([0-9]+)-g[0-9a-f]+$ ]]; then
  echo "v${BASH_REMATCH[1]}.${BASH_REMATCH[2]}.$((BASH_REMATCH[3] + 1))-dev.${BASH_REMATCH[4]}.g$sha"
else
  echo "v0.1.0-dev.g$sha"
fi
