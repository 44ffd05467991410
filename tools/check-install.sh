#!/usr/bin/env bash
# The real installs a user makes, each timed:
# 1. from git: `npm install git+file://<clone>#<commit>` in a scratch project. npm clones the
#    commit, installs the root's devDependencies (the compiler and the types the build imports:
#    nothing native), runs `prepare` (clean + build), packs the result and installs that, with
#    TypeORM and reflect-metadata, the required peers;
# 2. a CommonJS script runs an election on `sqlite::memory:` there;
# 3. from a copy of this checkout as a path, copied (`--install-links`: npm packs the folder,
#    running its `prepare`, instead of linking it), in the same project, and the script again.
# The SQLite driver, an optional peer the user adds, is test/deps/'s `better-sqlite3` (on NODE_PATH,
# alone): installing it here would compile it from source where no prebuilt binary can be
# downloaded (minutes) and prove nothing about this package. So test/deps/ must be installed.
# Needs the registry: `.ci/run` runs it after the test suites (test/package/consumer.test.ts
# checks the packed tarball offline).
# Usage: npm run check:install [-- <git revision, default HEAD>]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$repo" rev-parse "${1:-HEAD}")
work=$(mktemp -d "${TMPDIR:-/tmp}/gemstone-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
driver="$repo/test/deps/node_modules/better-sqlite3"
test -d "$driver" || { echo "check-install: $driver is missing: run \`npm ci --prefix test/deps\` first" >&2; exit 1; }
mkdir "$work/driver" && ln -s "$driver" "$work/driver/better-sqlite3"
started=$SECONDS
step() { echo "check-install: [$((SECONDS - started))s] $*"; }

step "cloning $rev (committed files only: commit first)"
git clone --quiet --no-local "file://$repo" "$work/clone"
git -C "$work/clone" checkout --quiet "$rev"

mkdir "$work/consumer"
cd "$work/consumer"
echo '{ "name": "consumer", "private": true }' > package.json
step "npm install git+file://…#$rev (the root's devDependencies, then prepare)"
npm install --no-audit --no-fund "git+file://$work/clone#$rev"
test -f node_modules/gemstone-utils/dist/src/index.js || { echo "check-install: dist/ missing from the installed package" >&2; exit 1; }
if find node_modules/gemstone-utils -name '*.map' | grep -q .; then echo "check-install: source maps were installed" >&2; exit 1; fi
# typeorm and reflect-metadata are required peers: npm installs them by itself.
for peer in typeorm reflect-metadata; do
  test -f "node_modules/$peer/package.json" || { echo "check-install: npm did not install the $peer peer" >&2; exit 1; }
done

run_election() {
  cp "$repo/test/package/consumer/run.cjs" .
  output=$(NODE_PATH="$work/driver" node run.cjs)
  echo "$output"
  node -e '
    const r = JSON.parse(process.argv[1]);
    if (!(r.elected && r.term === 1 && r.electorTerm === 1 && r.sameRegistry)) { console.error("check-install: unexpected result"); process.exit(1); }
    if (!r.resolved.startsWith(process.argv[2])) { console.error(`check-install: gemstone-utils resolved to ${r.resolved}, not the copy in the project`); process.exit(1); }
  ' "$output" "$work/consumer/node_modules/gemstone-utils/"
}
step "running a CommonJS election on sqlite::memory:"
run_election

# A local checkout in which `npm ci` ran, copied into the same project: its TypeORM,
# reflect-metadata and driver are the project's, as with the git install. The checkout is a copy
# of this one's tracked files (as they are in the working tree) with its node_modules linked: npm
# runs `prepare` (clean + build) in the folder it packs, and doing that here would delete this
# checkout's dist/ under whatever else uses it (`.ci/run` runs the smoke benchmark meanwhile).
step "npm install --install-links <a copy of this checkout> (packed: prepare rebuilds its dist/)"
mkdir "$work/checkout"
git -C "$repo" ls-files -z | (cd "$repo" && tar --null -T - -cf -) | tar -xf - -C "$work/checkout"
ln -s "$repo/node_modules" "$work/checkout/node_modules"
npm install --no-audit --no-fund --install-links "$work/checkout"
if [ -L node_modules/gemstone-utils ]; then echo "check-install: --install-links should copy the checkout, not link it" >&2; exit 1; fi
step "running a CommonJS election on sqlite::memory: (path install)"
run_election
step "ok"
