#!/usr/bin/env bash
# A/B of load generator (client library) builds against one 3-server Paddock ensemble:
# ROUNDS rounds of every build in turn, and one line per build and round: TPS, the load
# generator's own CPU (percent of one core, read from /proc over 5 s mid-run) and CPU
# µs per request, and the servers' CPU µs per request.
#
# usage: loadgen/bench/client-ab.sh CONNS SCENARIO ROUNDS LOADGEN_BIN...
#   DURATION=8 (seconds measured, at least 6), PADDOCK_BIN (default target/release/paddock),
#   LOADGEN_ARGS (more loadgen flags, e.g. --get-after-notify)
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,9p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
conns=$1 scenario=$2 rounds=$3
shift 3
require_executables "$@"
bench_workdir paddock-client-ab
start_ensemble paddock
pids_csv=$(IFS=,; echo "${server_pids[*]}")
ticks=$(getconf CLK_TCK)
# utime + stime of a process, in clock ticks.
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
for round in $(seq 1 "$rounds"); do
    for bin in "$@"; do
        "$bin" --servers "$hosts" --scenario "$scenario" --conns "$conns" \
            --duration "${DURATION:-8}" --warmup 2 --json --server-pids "$pids_csv" \
            ${LOADGEN_ARGS:-} > "$work/out.json" &
        loadgen=$!
        pids+=("$loadgen")
        sleep 3
        before=$(cpu_ticks "$loadgen") since=$(date +%s.%N)
        sleep 5
        after=$(cpu_ticks "$loadgen") until=$(date +%s.%N)
        wait "$loadgen"
        python3 - "$work/out.json" "$round" "$bin" "$before" "$after" "$since" "$until" "$ticks" <<'PY'
import json, os, sys
path, round_, binary, before, after, since, until, ticks = sys.argv[1:]
r = json.load(open(path))
tps = max(r["avg_tps"], 1)
loadgen = (float(after) - float(before)) / float(ticks) / (float(until) - float(since))
servers = sum(u["cpu_percent_mean"] for u in r["server_resources"]) / 100
print(f"round {round_} {os.path.basename(binary)}: {tps:.0f} TPS, "
      f"loadgen CPU {100 * loadgen:.0f} % = {loadgen / tps * 1e6:.1f} µs/req, "
      f"servers {servers / tps * 1e6:.1f} µs/req")
PY
    done
done
