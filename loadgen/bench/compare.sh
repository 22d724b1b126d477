#!/usr/bin/env bash
# Side-by-side benchmark: a Paddock 3-server ensemble and an Apache ZooKeeper 3.8
# 3-server ensemble (Debian's package) on this machine, each with separate dataDir and
# dataLogDir and forceSync=yes, driven by the same paddock-loadgen scenario matrix.
# Writes a markdown report (default: bench-report.md) with both sides and their ratio.
#
# usage: loadgen/bench/compare.sh [REPORT.md]
#   DURATION=20 WARMUP=3 CONNS=400 to change the matrix; MATRIX="create-delete:255 ..."
#   PADDOCK_BIN=path/to/paddock to measure another build
set -euo pipefail
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
report=${1:-bench-report.md}
duration=${DURATION:-20}
warmup=${WARMUP:-3}
conns=${CONNS:-400}
matrix=${MATRIX:-"create-delete:255 create-delete:1024 create-delete:4096 set-data:255 set-data:1024 pubsub:255"}
zk_home=/usr/share/zookeeper
[ -x "$zk_home/bin/zkServer.sh" ] || { echo "install Apache ZooKeeper: apt-get install -y zookeeper" >&2; exit 2; }

cargo build --release --bin paddock --bin paddock-loadgen
bench_workdir paddock-bench

cpu_seconds() {  # summed user+system CPU of the given pids
    python3 - "$@" <<'PY'
import os, sys
tick = os.sysconf("SC_CLK_TCK"); total = 0
for pid in sys.argv[1:]:
    try:
        fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
        total += int(fields[11]) + int(fields[12])
    except OSError:
        pass
print(total / tick)
PY
}

rss_mib() {  # summed resident memory of the given pids
    local total=0 pid kib
    for pid in "$@"; do
        kib=$(awk '/VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
        total=$((total + ${kib:-0}))
    done
    echo $((total / 1024))
}

results="$work/results.jsonl"
for kind in paddock zookeeper; do
    start_ensemble "$kind"
    for cell in $matrix; do
        scenario=${cell%%:*}
        size=${cell##*:}
        c=$conns
        extra=()
        if [ "$scenario" = pubsub ]; then
            c=$((conns / 4))  # each publisher brings 3 subscribers: same connection count
            extra=(--get-after-notify)
        fi
        before=$(cpu_seconds "${server_pids[@]}")
        line=$(./target/release/paddock-loadgen --servers "$hosts" --scenario "$scenario" \
            --conns "$c" --data-size "$size" --duration "$duration" --warmup "$warmup" \
            --root "/bench-$scenario-$size" "${extra[@]}" --json || true)
        after=$(cpu_seconds "${server_pids[@]}")
        rss=$(rss_mib "${server_pids[@]}")
        echo "$kind $scenario $size: $line" | cut -c1-200 >&2
        python3 - "$kind" "$before" "$after" "$rss" "$line" >> "$results" <<'PY'
import json, sys
kind, before, after, rss, line = sys.argv[1:]
try:
    summary = json.loads(line)
except ValueError:
    summary = {"error": line}
summary.update(system=kind, server_cpu_s=float(after) - float(before), server_rss_mib=int(rss))
print(json.dumps(summary))
PY
    done
    for pid in "${server_pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait "${server_pids[@]}" 2>/dev/null || true
done

python3 - "$results" "$report" "$duration" "$conns" <<'PY'
import json, platform, subprocess, sys
results, report, duration, conns = sys.argv[1:]
rows = [json.loads(l) for l in open(results)]
def key(r): return (r.get("scenario"), r.get("data_size"))
by = {}
for r in rows:
    by.setdefault(key(r), {})[r["system"]] = r
def fmt(v, d=1): return "-" if v is None else f"{v:,.{d}f}"
def ratio(a, b): return "-" if not a or not b else f"{a / b:.2f}x"
cpu = subprocess.run(["sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2"], capture_output=True, text=True).stdout.strip()
out = [f"# Paddock vs Apache ZooKeeper 3.8, side by side", "",
       f"Machine: {platform.node()}, {cpu}, {subprocess.run(['nproc'], capture_output=True, text=True).stdout.strip()} cores. "
       f"Both: 3 servers on 127.0.0.1, separate dataDir and dataLogDir, forceSync=yes; loadgen on the same machine. "
       f"{duration} s measured per cell after warmup, {conns} connections per cell.", "",
       "| scenario | data | system | TPS | p50 ms | p99 ms | p99.9 ms | fails | server CPU s | server RSS MiB |",
       "|---|---|---|---|---|---|---|---|---|---|"]
for (scenario, size), pair in by.items():
    for system in ("paddock", "zookeeper"):
        r = pair.get(system, {})
        lat = r.get("latency", {})
        out.append(f"| {scenario} | {size} | {system} | {fmt(r.get('avg_tps'), 0)} | {fmt(lat.get('p50'), 2)} | {fmt(lat.get('p99'), 2)} | {fmt(lat.get('p999'), 2)} | {r.get('fail_total', '-')} | {fmt(r.get('server_cpu_s'))} | {r.get('server_rss_mib', '-')} |")
out += ["", "| scenario | data | TPS ratio (Paddock/ZK, target ≥ 3x) | p99 ratio (Paddock/ZK, target ≤ 0.33) |", "|---|---|---|---|"]
for (scenario, size), pair in by.items():
    p, z = pair.get("paddock", {}), pair.get("zookeeper", {})
    out.append(f"| {scenario} | {size} | {ratio(p.get('avg_tps'), z.get('avg_tps'))} | {ratio(p.get('latency', {}).get('p99'), z.get('latency', {}).get('p99'))} |")
pub = [r for r in rows if r.get("scenario") == "pubsub" and r.get("events")]
if pub:
    out += ["", "Pub/sub events (eventStat / dataStat, ms):", ""]
    for r in pub:
        e = r["events"]; es = e["event_stat"]; ds = e.get("data_stat") or {}
        out.append(f"- {r['system']}: received {e['received']} of {e['expected']}; eventStat p50 {es['p50']:.2f} p99 {es['p99']:.2f}; dataStat p50 {ds.get('p50', 0):.2f} p99 {ds.get('p99', 0):.2f}")
open(report, "w").write("\n".join(out) + "\n")
print("\n".join(out))
PY
