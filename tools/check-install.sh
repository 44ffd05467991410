#!/usr/bin/env bash
# The real install a user makes from git: `npm install git+file://<clone>#<commit>` in a scratch
# project. npm clones the commit, installs the devDependencies (native SQLite builds), runs
# `prepare` (clean + build), packs the result and installs that. Then a CommonJS script there
# runs an election on `sqlite::memory:`. Needs the registry and takes minutes: `.ci/run` runs it
# after the test suites (test/package/consumer.test.ts checks the packed tarball offline).
# Then the same from this checkout as a local path (npm links it and runs prepare).
# Usage: npm run check:install [-- <git revision, default HEAD>]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
rev=$(git -C "$repo" rev-parse "${1:-HEAD}")
work=$(mktemp -d "${TMPDIR:-/tmp}/gemstone-check-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
started=$SECONDS
step() { echo "check-install: [$((SECONDS - started))s] $*"; }

step "cloning $rev (committed files only: commit first)"
git clone --quiet --no-local "file://$repo" "$work/clone"
git -C "$work/clone" checkout --quiet "$rev"

mkdir "$work/consumer"
cd "$work/consumer"
echo '{ "name": "consumer", "private": true }' > package.json
step "npm install git+file://…#$rev better-sqlite3 (runs prepare with devDependencies)"
# better-sqlite3 is an optional peer: a SQLite user installs it; typeorm and reflect-metadata are
# required peers, which npm installs by itself.
npm install --no-audit --no-fund "git+file://$work/clone#$rev" better-sqlite3
test -f node_modules/gemstone-utils/dist/src/index.js || { echo "check-install: dist/ missing from the installed package" >&2; exit 1; }
if find node_modules/gemstone-utils -name '*.map' | grep -q .; then echo "check-install: source maps were installed" >&2; exit 1; fi

run_election() {
  cp "$repo/test/package/consumer/run.cjs" .
  output=$(node run.cjs)
  echo "$output"
  node -e '
    const r = JSON.parse(process.argv[1]);
    if (!(r.elected && r.term === 1 && r.electorTerm === 1 && r.sameRegistry)) { console.error("check-install: unexpected result"); process.exit(1); }
  ' "$output"
}
step "running a CommonJS election on sqlite::memory:"
run_election

# A local checkout in which `npm install` ran (this one): npm links it and runs its prepare.
mkdir "$work/path-consumer"
cd "$work/path-consumer"
echo '{ "name": "path-consumer", "private": true }' > package.json
# No driver here: a linked package resolves its imports (typeorm, better-sqlite3) from the
# checkout's own node_modules, so compiling better-sqlite3 again would prove nothing.
step "npm install <this checkout> (a path install: linked, prepare rebuilds dist/)"
npm install --no-audit --no-fund "$repo"
test -L node_modules/gemstone-utils || { echo "check-install: a path install should link the checkout" >&2; exit 1; }
step "running a CommonJS election on sqlite::memory: (path install)"
run_election
step "ok"
