#!/usr/bin/env bash
# Thread switches and server CPU per write: starts a 3-server Paddock ensemble, runs
# one loadgen cell against its leader or a follower, and divides the servers' context
# switches (all threads, voluntary and not) and user+system CPU by the writes the
# leader's zxid advanced. Hand-offs between threads are what a single client's latency
# is made of on this machine, and unlike latency this count hardly varies with noise.
#
# usage: loadgen/bench/switches.sh [leader|follower] [SCENARIO] [CONNS]
#   PADDOCK_BIN=path/to/paddock to measure another build (A/B); DURATION=6
set -euo pipefail
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
target=${1:-leader}
scenario=${2:-create-delete}
conns=${3:-1}
duration=${DURATION:-6}
cargo build --release -q --bin paddock --bin paddock-loadgen
bench_workdir paddock-switches

start_ensemble paddock
IFS=, read -ra servers <<< "$hosts"
ports=("${servers[@]##*:}")

leader="" follower=""
for _ in $(seq 1 150); do
    for port in "${ports[@]}"; do
        case "$(four_letter "$port" srvr 2>/dev/null | grep Mode || true)" in
            *leader*) leader=$port ;;
            *follower*) follower=$port ;;
        esac
    done
    [ -n "$leader" ] && [ -n "$follower" ] && break
    leader="" follower=""
    sleep 0.2
done
[ -n "$leader" ] || { echo "no leader elected" >&2; exit 1; }

counters() {  # switches and CPU seconds of the servers, all threads
    python3 - "${server_pids[@]}" <<'PY'
import glob, os, sys
switches, cpu = 0, 0
for pid in sys.argv[1:]:
    for status in glob.glob(f"/proc/{pid}/task/*/status"):
        for line in open(status):
            if line.startswith(("voluntary_ctxt", "nonvoluntary_ctxt")):
                switches += int(line.split()[1])
    fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    cpu += int(fields[11]) + int(fields[12])
print(switches, cpu / os.sysconf("SC_CLK_TCK"))
PY
}
zxid() { four_letter "$leader" srvr | awk '/^Zxid/ {print $2}'; }

port=$leader
[ "$target" = follower ] && port=$follower
before=$(counters) zxid_before=$(zxid)
summary=$(target/release/paddock-loadgen --servers "127.0.0.1:$port" --scenario "$scenario" \
    --conns "$conns" --data-size 255 --duration "$duration" --warmup 1 --json)
after=$(counters) zxid_after=$(zxid)
python3 - "$before" "$after" "$zxid_before" "$zxid_after" "$summary" <<PY
import json, sys
before, after, z0, z1, summary = sys.argv[1:]
(s0, c0), (s1, c1) = before.split(), after.split()
writes = int(z1, 16) - int(z0, 16)
latency = json.loads(summary)["latency"]
print(f"$scenario, $conns connection(s) on the $target: {writes} writes, "
      f"mean {latency['mean']:.3f} ms, p99 {latency['p99']} ms, "
      f"{(int(s1) - int(s0)) / writes:.1f} switches/write, "
      f"{(float(c1) - float(c0)) * 1e6 / writes:.0f} µs server CPU/write")
PY
