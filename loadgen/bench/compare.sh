#!/usr/bin/env bash
# Side-by-side benchmark: a Paddock 3-server ensemble and an Apache ZooKeeper 3.8
# 3-server ensemble (Debian's package) on this machine, each with separate dataDir and
# dataLogDir and forceSync=yes, driven by the same paddock-loadgen scenario matrix.
# RUNS rounds (default 3), each a fresh Paddock ensemble then a fresh ZooKeeper one
# through the whole matrix, so both sides see the same hour of this shared machine.
# Writes a markdown report (default: bench-report.md): per cell the mean of the rounds
# with their spread (min–max), both sides and their ratio, and the servers' CPU per
# request.
#
# usage: loadgen/bench/compare.sh [REPORT.md]
#   DURATION=15 WARMUP=3 RUNS=3 to change the rounds; MATRIX to change the cells, each
#   scenario:dataSize:conns[:get] (pubsub's conns are publishers, each with 3
#   subscriber connections; :get reads the data after each event, --get-after-notify)
#   PADDOCK_BIN=path/to/paddock to measure another build
set -euo pipefail
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
report=${1:-bench-report.md}
duration=${DURATION:-15}
warmup=${WARMUP:-3}
runs=${RUNS:-3}
# The issue's cells first (single client, 100 and 1,000 connections, big data,
# pub/sub with and without the read), then the other cells BENCHMARKS.md tracks.
matrix=${MATRIX:-"create-delete:255:1 set-data:255:1 create-delete:255:100 create-delete:255:1000 create-delete:4096:400 pubsub:255:100:get pubsub:255:100 create-delete:255:400 set-data:255:400 set-data:1024:400"}
zk_home=/usr/share/zookeeper
[ -x "$zk_home/bin/zkServer.sh" ] || { echo "install Apache ZooKeeper: apt-get install -y zookeeper" >&2; exit 2; }

cargo build --release --bin paddock --bin paddock-loadgen
bench_workdir paddock-bench

rss_mib() {  # summed resident memory of the given pids
    local total=0 pid kib
    for pid in "$@"; do
        kib=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        total=$((total + ${kib:-0}))
    done
    echo $((total / 1024))
}

results="$work/results.jsonl"
for run in $(seq 1 "$runs"); do
    for kind in paddock zookeeper; do
        start_ensemble "$kind"
        for cell in $matrix; do
            IFS=: read -r scenario size c flag <<< "$cell"
            extra=()
            [ "${flag:-}" = get ] && extra=(--get-after-notify)
            line=$(./target/release/paddock-loadgen --servers "$hosts" --scenario "$scenario" \
                --conns "$c" --data-size "$size" --duration "$duration" --warmup "$warmup" \
                --root "/bench-$scenario-$size-$c" "${extra[@]}" --json \
                --server-pids "$(IFS=,; echo "${server_pids[*]}")" || true)
            rss=$(rss_mib "${server_pids[@]}")
            echo "round $run $kind $cell: $line" | cut -c1-200 >&2
            python3 - "$kind" "$cell" "$run" "$rss" "$line" >> "$results" <<'PY'
import json, sys
kind, cell, run, rss, line = sys.argv[1:]
try:
    summary = json.loads(line)
except ValueError:
    summary = {"error": line}
summary.update(system=kind, cell=cell, run=int(run), server_rss_mib=int(rss))
print(json.dumps(summary))
PY
        done
        for pid in "${server_pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
        wait "${server_pids[@]}" 2>/dev/null || true
    done
done
cp "$results" "${report%.md}.jsonl"

python3 - "$results" "$report" "$duration" "$runs" "$matrix" <<'PY'
import json, platform, statistics, subprocess, sys
results, report, duration, runs, matrix = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
by = {}
for r in rows:
    by.setdefault((r["cell"], r["system"]), []).append(r)

def values(cell, system, get):
    out = []
    for r in by.get((cell, system), []):
        try:
            v = get(r)
        except (KeyError, TypeError, ZeroDivisionError):
            v = None
        if v is not None:
            out.append(v)
    return out

def tps(r): return r["avg_tps"]
def p99(r): return r["latency"]["p99"]
def avg(r): return r["latency"]["mean"]
def cpu_us(r):
    # The servers' CPU while measuring (loadgen samples /proc), per request.
    percent = sum(u["cpu_percent_mean"] for u in r["server_resources"] if u["source"] == "proc")
    return percent / 100 * r["seconds"] / r["total_req"] * 1e6
def event_p99(r): return r["events"]["event_stat"]["p99"]

def spread(vs, d):
    if not vs: return "-"
    m = statistics.mean(vs)
    if len(vs) == 1: return f"{m:,.{d}f}"
    return f"{m:,.{d}f} ({min(vs):,.{d}f}–{max(vs):,.{d}f})"

def ratio(a, b):
    return "-" if not a or not b else f"{statistics.mean(a) / statistics.mean(b):.2f}×"

def label(cell):
    scenario, size, conns, *flag = cell.split(":")
    if scenario == "pubsub":
        return f"pub/sub {conns} pub × 3 sub, {size}" + (", get-after-notify" if flag else ", no get")
    return f"{scenario} {conns}, {size}"

cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
cores = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip()
out = ["# Paddock vs Apache ZooKeeper 3.8, side by side", "",
       f"Machine: {platform.node()}, {cpu}, {cores} cores. Both: 3 servers on 127.0.0.1, "
       f"separate dataDir and dataLogDir, forceSync=yes; loadgen on the same machine. "
       f"{runs} rounds (each a fresh Paddock ensemble, then a fresh ZooKeeper one), "
       f"{duration} s measured per cell after warmup; mean (min–max) over the rounds. "
       "TPS counts the scenario's requests (pub/sub: publishes); CPU is the three servers' "
       "user+system time per request.", "",
       "| cell (conns, bytes) | Paddock TPS | ZooKeeper TPS | ratio | Paddock avg / p99 ms | ZK avg / p99 ms | p99 ratio | server CPU µs/req P / ZK | fails P / ZK |",
       "|---|---|---|---|---|---|---|---|---|"]
for cell in matrix.split():
    p, z = (lambda g: values(cell, "paddock", g)), (lambda g: values(cell, "zookeeper", g))
    is_pub = cell.startswith("pubsub")
    lat = event_p99 if is_pub else p99
    lat_name = "event " if is_pub else ""
    fails = lambda s: sum(values(cell, s, lambda r: r["fail_total"]))
    out.append(" | ".join([
        f"| {label(cell)}", spread(p(tps), 0), spread(z(tps), 0), ratio(p(tps), z(tps)),
        f"{spread(p(avg), 2)} / {lat_name}{spread(p(lat), 1)}",
        f"{spread(z(avg), 2)} / {lat_name}{spread(z(lat), 1)}",
        ratio(p(lat), z(lat)),
        f"{spread(p(cpu_us), 0)} / {spread(z(cpu_us), 0)}",
        f"{fails('paddock')} / {fails('zookeeper')} |"]))
errors = [r for r in rows if "error" in r]
if errors:
    out += ["", f"{len(errors)} runs gave no summary: " + "; ".join(f"{r['system']} {r['cell']} round {r['run']}" for r in errors)]
open(report, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
