#!/usr/bin/env bash
# Checks docker-compose.yml without a container engine: Debian's docker-compose (installed if
# missing) must parse and resolve it with and without the cluster profile, and the services
# and published ports must be the ones the README and eval/qdrant/run.sh use.
set -euo pipefail
cd "$(dirname "$0")/../.."
if ! command -v docker-compose > /dev/null; then
  apt-get update -qq && apt-get install -y -qq docker-compose > /dev/null
fi

fail() { echo "compose check: $*" >&2; exit 1; }
docker-compose config -q || fail "docker-compose cannot parse docker-compose.yml"
# docker-compose 1.29 lists every service in both cases; the profiles tell them apart.
resolved=$(mktemp)
trap 'rm -f "$resolved"' EXIT
docker-compose --profile cluster config > "$resolved"
/usr/bin/python3 - "$resolved" <<'PY'
import sys, yaml
services = yaml.safe_load(open(sys.argv[1]))["services"]
def check(ok, what):
    if not ok:
        sys.exit(f"compose check: {what}")
check(sorted(services) == ["neardup", "node1", "node2", "node3", "qdrant"], f"services {sorted(services)}")
check(services["neardup"]["command"].startswith("serve --index /data/idx"), "neardup serves /data/idx")
check(sorted(services["neardup"].get("ports", [])) == ["127.0.0.1:8080:8080/tcp"], "neardup publishes 8080")
check(services["neardup"].get("user") == "1000:1000", "neardup writes ./data as the user, not root")
check("profiles" not in services["qdrant"], "the single node must start without a profile")
ports = lambda name: sorted(services[name].get("ports", []))
check(ports("qdrant") == ["127.0.0.1:6333:6333/tcp", "127.0.0.1:6334:6334/tcp"],
      f"qdrant publishes {ports('qdrant')}")
check(ports("node1") == ["127.0.0.1:6344:6334/tcp"], f"node1 publishes {ports('node1')}")
for name in ("qdrant", "node1", "node2", "node3"):
    check(services[name]["image"] == "qdrant/qdrant:v1.18.3", f"{name} image")
for name in ("node1", "node2", "node3"):
    check(services[name].get("profiles") == ["cluster"], f"{name} is not in the cluster profile")
for name in ("node2", "node3"):
    check(services[name]["command"] == f"./qdrant --bootstrap http://node1:6335 --uri http://{name}:6335",
          f"{name} does not bootstrap from node1")
PY
echo "docker-compose.yml: parsed by $(docker-compose version --short); services and ports as documented"
