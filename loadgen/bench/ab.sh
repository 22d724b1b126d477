#!/usr/bin/env bash
# A/B of Paddock builds on one loadgen cell: ROUNDS rounds, each starting a fresh
# 3-server ensemble of every build in turn (so noise on this shared machine falls on
# all of them alike), and one line per build and round: TPS, mean and p99 latency, the
# servers' CPU (percent of one core, summed) and server CPU µs per request.
#
# usage: loadgen/bench/ab.sh CONNS SCENARIO ROUNDS PADDOCK_BIN...
#   DURATION=10 (seconds measured), DATA_SIZE=255, LOADGEN_ARGS (more loadgen flags,
#   e.g. --get-after-notify)
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,9p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
conns=$1 scenario=$2 rounds=$3
shift 3
require_executables "$@"
cargo build --release -q --bin paddock-loadgen
bench_workdir paddock-ab
for round in $(seq 1 "$rounds"); do
    for bin in "$@"; do
        PADDOCK_BIN=$bin start_ensemble paddock
        pids_csv=$(IFS=,; echo "${server_pids[*]}")
        target/release/paddock-loadgen --servers "$hosts" --scenario "$scenario" \
            --conns "$conns" --data-size "${DATA_SIZE:-255}" --duration "${DURATION:-10}" \
            --warmup 2 --json --server-pids "$pids_csv" ${LOADGEN_ARGS:-} > "$work/out.json"
        python3 - "$work/out.json" "$round" "$bin" <<'PY'
import json, os, sys
path, round_, binary = sys.argv[1:]
r = json.load(open(path))
cpu = sum(u["cpu_percent_mean"] for u in r["server_resources"])
per_req = cpu / 100 * r["seconds"] / max(r["total_req"], 1) * 1e6
print(f"round {round_} {os.path.basename(binary)}: {r['avg_tps']:.0f} TPS, "
      f"mean {r['latency']['mean']:.3f} ms, p99 {r['latency']['p99']} ms, "
      f"server CPU {cpu:.0f} %, {per_req:.1f} µs/req")
PY
        for pid in "${server_pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
        wait "${server_pids[@]}" 2>/dev/null || true
        rm -rf "$work"/paddock*
    done
done
