#!/usr/bin/env bash
# The design card's flow through the containers of docker-compose.yml: `up` (Qdrant and
# `neardup serve`), a dedup against the Qdrant service, its eval, an index and a query of one
# core_id, a document added to the served index and looked up, then `down -v`.
#
#   NEARDUP_BIN=target/release/neardup eval/containers.sh
#
# Made for machines that reach no image registry (see ../shared/notes/containers.md):
# - the base image is a minimal Debian made with debootstrap (local/debian:bookworm, cached);
# - `qdrant/qdrant:v1.18.3` is a local stand-in: the binary eval/qdrant/build.sh made, on that
#   base, tagged with the name the compose file pulls;
# - neardup's image is the Dockerfile's `prebuilt` target over NEARDUP_BIN, which must be built
#   with `--features qdrant`;
# - Debian's docker-compose 1.29 runs a copy of docker-compose.yml in which every service uses
#   the host's network (no bridge here), so service names become 127.0.0.1 and published ports
#   become the services' own, on loopback; one-off commands run in a copy of the neardup
#   service (`neardup-run`), since compose 1.29 cannot `run` a service beside its own running
#   container on the host's network.
# It starts dockerd if none runs, and stops what it started.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
NEARDUP_BIN=${NEARDUP_BIN:-target/release/neardup}
CACHE=${NEARDUP_CONTAINER_CACHE:-$HOME/.cache/neardup/containers}
MODELS=${NEARDUP_MODELS:-$HOME/.cache/neardup/models}
QDRANT_BIN=${QDRANT_BIN:-$(bash eval/qdrant/run.sh binary)}
WORK=$(mktemp -d)
mkdir -p "$CACHE"

step() { printf '\n== %s\n' "$*"; }

"$NEARDUP_BIN" --help >/dev/null
if ! "$NEARDUP_BIN" dedup --help | grep -q -- '--qdrant-url'; then
  echo "error: $NEARDUP_BIN has no Qdrant client; build it with --features qdrant" >&2
  exit 1
fi
[[ -d $MODELS ]] || {
  echo "error: no models in $MODELS; run \`neardup models fetch static\` first" >&2
  exit 1
}

step "engine"
for tool in docker dockerd docker-compose debootstrap; do
  command -v "$tool" >/dev/null || { apt-get update -qq && apt-get install -y -qq docker.io docker-compose debootstrap >/dev/null; break; }
done
DOCKERD=
if ! docker info >/dev/null 2>&1; then
  dockerd --bridge=none --iptables=false --ip-masq=false >"$CACHE/dockerd.log" 2>&1 &
  DOCKERD=$!
  for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
fi
COMPOSE=(docker-compose -p neardup-flow -f "$WORK/docker-compose.yml")
cleanup() {
  "${COMPOSE[@]}" down -v >/dev/null 2>&1 || true
  [[ -n $DOCKERD ]] && kill "$DOCKERD" && wait "$DOCKERD" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
docker version --format 'docker {{.Server.Version}}'
docker-compose version --short

step "images"
if ! docker image inspect local/debian:bookworm >/dev/null 2>&1; then
  if [[ ! -f $CACHE/rootfs.tar ]]; then
    # CA certificates: Qdrant's HTTP clients refuse to start without them.
    debootstrap --variant=minbase --include=ca-certificates bookworm "$WORK/rootfs" >/dev/null
    tar -C "$WORK/rootfs" -cf "$CACHE/rootfs.tar" .
  fi
  docker import - local/debian:bookworm <"$CACHE/rootfs.tar" >/dev/null
fi
mkdir -p "$WORK/qdrant-image"
cp "$QDRANT_BIN" "$WORK/qdrant-image/qdrant"
printf 'FROM local/debian:bookworm\nWORKDIR /qdrant\nCOPY qdrant /qdrant/qdrant\nCMD ["./qdrant"]\n' \
  >"$WORK/qdrant-image/Dockerfile"
docker build -q -t qdrant/qdrant:v1.18.3 "$WORK/qdrant-image" >/dev/null
# The users' Dockerfile, its prebuilt target: the binary must lie inside the build context.
mkdir -p "$WORK/context"
cp Dockerfile "$WORK/context/"
cp "$NEARDUP_BIN" "$WORK/context/neardup"
docker build -q --target prebuilt --build-arg BASE=local/debian:bookworm \
  --build-arg NEARDUP_BIN=neardup -t neardup:latest "$WORK/context" >/dev/null
docker images --format '{{.Repository}}:{{.Tag}} {{.Size}}' | grep -E '^(neardup|qdrant|local)'

step "compose file for host networking"
mkdir -p "$WORK/data"
cp data/bibdedupe-sample.jsonl "$WORK/data/"
python3 - docker-compose.yml "$WORK/docker-compose.yml" "$WORK/data" "$MODELS" <<'PY'
import sys, yaml
source, target, data, models = sys.argv[1:]
spec = yaml.safe_load(open(source))
for name, service in spec["services"].items():
    service.pop("ports", None)
    service.pop("depends_on", None)
    service["network_mode"] = "host"
    if name == "neardup":
        service.pop("build", None)
        service["volumes"] = [f"{data}:/data", f"{models}:/models"]
        service["command"] = (service["command"].replace("qdrant:6334", "127.0.0.1:6334")
                              .replace("0.0.0.0:8080", "127.0.0.1:8080"))
    if name == "qdrant":
        service["environment"] = {"QDRANT__SERVICE__HOST": "127.0.0.1",
                                  "QDRANT__TELEMETRY_DISABLED": "true"}
spec["volumes"] = {k: v for k, v in spec["volumes"].items() if k != "neardup-models"}
# compose 1.29 links a one-off container to its service's running containers when the network
# is the host's, which docker refuses: one-off commands get a service of their own here.
oneoff = dict(spec["services"]["neardup"])
oneoff.pop("command")
spec["services"]["neardup-run"] = oneoff
yaml.safe_dump(spec, open(target, "w"), sort_keys=False)
PY
grep -n "network_mode\|command\|image" "$WORK/docker-compose.yml" | head -20

step "docker-compose up -d"
"${COMPOSE[@]}" up -d qdrant neardup 2>&1
ready=
for _ in $(seq 60); do
  curl -sf localhost:6333/readyz >/dev/null && curl -sf localhost:8080/health >/dev/null && { ready=1; break; }
  sleep 1
done
if [[ -z $ready ]]; then
  "${COMPOSE[@]}" logs --tail 20
  echo "error: the services did not come up" >&2
  exit 1
fi
curl -s localhost:6333/ && echo
curl -s localhost:8080/health && echo
curl -s localhost:8080/stats && echo

run() { echo "\$ docker-compose run --rm neardup $*"; "${COMPOSE[@]}" run --rm -T neardup-run "$@"; }
step "dedup against the Qdrant service"
run dedup /data/bibdedupe-sample.jsonl --qdrant-url http://127.0.0.1:6334 --collection flow \
  --out /data/out -q
step "eval"
run eval --truth /data/bibdedupe-sample.jsonl --pred /data/out
step "index and query one core_id"
run index /data/bibdedupe-sample.jsonl --index /data/idx-sample --qdrant-url http://127.0.0.1:6334 \
  --collection sample -q
run query --index /data/idx-sample --id special_cases/id_0000001
step "the served index: add two records, look one up"
curl -s localhost:8080/documents -d '[{"id": "a", "title": "Aspirin and the risk of recurrent stroke", "abstract": "a randomised trial of aspirin after a first stroke in older adults"}, {"id": "b", "title": "Aspirin and the risk of recurrent stroke.", "abstract": "A randomised trial of aspirin after a first stroke in older adults"}]'
echo
curl -s localhost:8080/documents/a/duplicates && echo
"${COMPOSE[@]}" ps

step "docker-compose down -v"
"${COMPOSE[@]}" down -v 2>&1
echo "ok: the flow ran through the containers"
