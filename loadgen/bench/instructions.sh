#!/usr/bin/env bash
# A standalone Paddock server's user-space instructions per request, counted with
# callgrind: deterministic to about 0.2 %, where a timed A/B on a shared machine moves
# 10-20 %. The counters are zeroed once the server is up, the loadgen sends a fixed
# number of requests, and the counts are dumped; the kernel's share is not counted.
#
# usage: loadgen/bench/instructions.sh PADDOCK_BIN SCENARIO CONNS REQUESTS [loadgen flags]
#   e.g. loadgen/bench/instructions.sh target/release/paddock create-delete 100 20000
#        loadgen/bench/instructions.sh OTHER/paddock pubsub 100 5000 --get-after-notify
#   needs valgrind (Debian valgrind); prints "Ir TOTAL per request N".
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,10p "$0" >&2; exit 2; }
cd "$(dirname "$0")/../.."
source loadgen/bench/lib.sh
bin=$1 scenario=$2 conns=$3 requests=$4
shift 4
cargo build --release -q --bin paddock-loadgen
bench_workdir paddock-instructions
port=$(free_ports 1)
mkdir -p "$work/data" "$work/log"
cat > "$work/zoo.cfg" <<CFG
tickTime=2000
dataDir=$work/data
dataLogDir=$work/log
clientPort=$port
clientPortAddress=127.0.0.1
maxClientCnxns=0
forceSync=yes
4lw.commands.whitelist=*
admin.enableServer=false
CFG
valgrind --tool=callgrind --callgrind-out-file="$work/callgrind.out" \
    "$bin" --config "$work/zoo.cfg" 2> "$work/valgrind.log" &
server=$!
pids+=("$server")
up=""
for _ in $(seq 1 300); do
    if four_letter "$port" ruok 2>/dev/null | grep -q imok; then up=1; break; fi
    kill -0 "$server" 2>/dev/null || break  # it exited: no point waiting
    sleep 0.3
done
if [ -z "$up" ]; then
    echo "the server under callgrind did not answer ruok; its log:" >&2
    tail -20 "$work/valgrind.log" >&2
    exit 1
fi
callgrind_control -z "$server" > /dev/null
target/release/paddock-loadgen --servers "127.0.0.1:$port" --scenario "$scenario" \
    --conns "$conns" --requests "$requests" --json "$@" > "$work/out.json"
callgrind_control -d "$server" > /dev/null
sleep 1
dump=$(ls -t "$work"/callgrind.out.* | head -1)
total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
echo "Ir $total per request $((total / requests))"
