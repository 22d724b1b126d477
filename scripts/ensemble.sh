#!/usr/bin/env bash
# Builds Paddock and runs the three-server ensemble of conf/zoo{1,2,3}.cfg on
# 127.0.0.1 (clients on ports 2181-2183). Ctrl-C or SIGTERM stops all three.
# Data and logs go to run/ at the repository root.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --release --bin paddock
mkdir -p run
pids=()
stop() {
    trap - INT TERM EXIT
    echo "stopping the ensemble"
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait
}
trap stop INT TERM EXIT

for i in 1 2 3; do
    mkdir -p "run/zoo$i/data" "run/zoo$i/log"
    echo "$i" > "run/zoo$i/data/myid"
    ./target/release/paddock --config "conf/zoo$i.cfg" 2> "run/zoo$i.log" &
    pids+=("$!")
done
echo "ensemble running: clients at 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 (logs in run/)"
echo "press Ctrl-C to stop"
# Exit when any server exits, so a crash is not hidden.
wait -n
echo "a server exited; see run/zoo*.log"
