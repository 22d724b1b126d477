#!/usr/bin/env bash
# A write's time by stage on a fresh 3-server Paddock ensemble: runs one loadgen cell,
# then prints each server's mean quorum_ack_latency (leader only: appending proposals
# to their commit), updatelatency (arrival to reply, for the writes of the clients
# connected to it) and fsynctime, from its /metrics, and the client-side TPS and mean.
#
# usage: loadgen/bench/stages.sh CONNS [SCENARIO]
#   PADDOCK_BIN (default target/release/paddock), DURATION=8, DATA_SIZE=255
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,8p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
conns=$1 scenario=${2:-create-delete}
bin=$(realpath "${PADDOCK_BIN:-target/release/paddock}")
cargo build --release -q --bin paddock-loadgen
[ -n "${PADDOCK_BIN:-}" ] || cargo build --release -q --bin paddock
bench_workdir paddock-stages
# Each server also serves /metrics on a free port, recorded next to its zoo.cfg.
cat > "$work/with-metrics.sh" <<WRAP
#!/usr/bin/env bash
cfg=\$2
port=\$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf '%s\n' metricsProvider.className=org.apache.zookeeper.metrics.prometheus.PrometheusMetricsProvider \
    metricsProvider.httpHost=127.0.0.1 "metricsProvider.httpPort=\$port" >> "\$cfg"
echo "\$port" > "\$(dirname "\$cfg")/metrics-port"
exec "$bin" "\$@"
WRAP
chmod +x "$work/with-metrics.sh"
PADDOCK_BIN=$work/with-metrics.sh start_ensemble paddock
target/release/paddock-loadgen --servers "$hosts" --scenario "$scenario" --conns "$conns" \
    --data-size "${DATA_SIZE:-255}" --duration "${DURATION:-8}" --warmup 2 --json > "$work/out.json"
for dir in "$work"/paddock*/; do
    python3 - "$(cat "$dir/metrics-port")" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/metrics", timeout=5).read().decode()
values = {}
for line in text.splitlines():
    parts = line.split()
    if len(parts) == 2 and not line.startswith("#"):
        values[parts[0]] = float(parts[1])
role = "leader" if values.get("paddock_is_leader") == 1 else "follower"
stages = []
for name in ["quorum_ack_latency", "updatelatency", "fsynctime"]:
    count = values.get(name + "_count", 0)
    if count:
        stages.append(f"{name} {values[name + '_sum'] / count:.3f} ms (x{count:.0f})")
print(f"{role}: " + "; ".join(stages))
PY
done
python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"client: {r['avg_tps']:.0f} TPS, mean {r['latency']['mean']:.3f} ms")
PY
