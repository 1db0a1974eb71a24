#!/usr/bin/env bash
# One line per commit since the last tag (all commits when there is no tag).
set -euo pipefail
last="$(git describe --tags --abbrev=0 2>/dev/null || true)"
git log --no-merges --format='%s' ${last:+"$last"..HEAD}
