# What the bench scripts share; sourced, not run.

# bench_workdir PREFIX: makes $work (removed at exit) and $pids (killed at exit, with
# `wait`): every process a script starts goes into $pids.
bench_workdir() {
    work=$(mktemp -d "/tmp/$1.XXXXXX")
    pids=()
    trap bench_cleanup EXIT INT TERM
}

bench_cleanup() {
    for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}

# free_ports N: N distinct free ports, held together while chosen so none comes out twice.
free_ports() {
    python3 -c '
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}
