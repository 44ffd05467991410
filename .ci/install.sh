#!/usr/bin/env bash
# `npm ci` of one package folder, reusing the node_modules an earlier run built from the same lock
# file on this machine. A clean `npm ci` of test/deps/ compiles sqlite3 (twice: 6.x and 5.x) and
# better-sqlite3 from source: about 8 minutes of a CI run on two cores. CI runs on a machine that
# keeps what earlier runs left, so the tree is kept under $GEMSTONE_CI_CACHE (default
# /var/cache/gemstone-ci), keyed by the lock file, the npm arguments, Node's version and the
# architecture; a new machine, or a changed lock file, installs from scratch and fills the cache.
# A restored tree must load the native drivers it holds, or it is thrown away and installed anew.
# Usage: .ci/install.sh <folder> [npm ci arguments...]
set -euo pipefail
dir=$1; shift
cache_root=${GEMSTONE_CI_CACHE:-/var/cache/gemstone-ci}
key=$( { cat "$dir/package-lock.json"; echo "$*"; node --version; uname -m; } | sha256sum | cut -c1-32)
cached="$cache_root/$key/node_modules"

# The native drivers the tree holds (test/deps/'s; none in the other folders) must load on this Node.
loads_natives() {
  (cd "$dir" && node -e '
    for (const name of ["better-sqlite3", "sqlite3", "sqlite3-v5"]) {
      let path; try { path = require.resolve(name); } catch { continue; }
      const driver = require(path);
      // better-sqlite3 loads its addon when a database opens; sqlite3 when required.
      if (name === "better-sqlite3") new driver(":memory:").close();
    }')
}

if [ -d "$cached" ]; then
  rm -rf "$dir/node_modules"
  cp -a "$cached" "$dir/node_modules"
  if loads_natives; then
    echo "ci: $dir/node_modules restored from $cached (lock file unchanged)"
    exit 0
  fi
  echo "ci: the cached $dir/node_modules does not load its native drivers: installing anew"
  rm -rf "$cache_root/$key"
fi

npm ci --prefix "$dir" "$@"
# Filled in a temporary folder and renamed, so an interrupted run never leaves half a tree.
mkdir -p "$cache_root"
tmp=$(mktemp -d "$cache_root/.filling.XXXXXX")
if cp -a "$dir/node_modules" "$tmp/node_modules" && mv -T "$tmp" "$cache_root/$key" 2>/dev/null; then
  echo "ci: $dir/node_modules kept in $cache_root/$key"
else
  rm -rf "$tmp"
fi
# Only the trees of the current lock files are kept (four folders: root, test, nest11, typescript7).
ls -1dt "$cache_root"/*/ 2>/dev/null | tail -n +9 | xargs -r rm -rf
