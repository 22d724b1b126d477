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

# require_executables PATH...: exits (status 2) naming the first that is not executable.
require_executables() {
    local bin
    for bin in "$@"; do
        [ -x "$bin" ] || { echo "not an executable: $bin" >&2; exit 2; }
    done
}

# free_ports N: N distinct free ports, held together while chosen so none comes out twice.
free_ports() {
    python3 -c '
import socket, sys
held = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in held: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in held))' "$1"
}

# four_letter PORT WORD: what the server on 127.0.0.1:PORT answers to a four-letter
# word (ruok, srvr, ...), read until it closes; fails if it cannot be reached.
four_letter() {
    python3 - "$1" "$2" <<'PY'
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=2)
s.sendall(sys.argv[2].encode())
out = b""
while chunk := s.recv(65536):
    out += chunk
print(out.decode())
PY
}

# start_ensemble KIND (paddock or zookeeper) -> sets $hosts and $server_pids, once the
# ensemble has a leader: three servers on loopback, each with its own dataDir and
# dataLogDir, forceSync=yes. Paddock is target/release/paddock or $PADDOCK_BIN;
# ZooKeeper is $zk_home's zkServer.sh.
start_ensemble() {
    local kind=$1 lines="" ports=() i
    local all=($(free_ports 9))
    for i in 1 2 3; do
        lines+="server.$i=127.0.0.1:${all[$((3*i-3))]}:${all[$((3*i-2))]}"$'\n'
        ports+=("${all[$((3*i-1))]}")
    done
    server_pids=()
    hosts=""
    for i in 1 2 3; do
        local dir="$work/$kind$i"
        mkdir -p "$dir/data" "$dir/log"
        echo "$i" > "$dir/data/myid"
        cat > "$dir/zoo.cfg" <<CFG
tickTime=2000
initLimit=10
syncLimit=5
dataDir=$dir/data
dataLogDir=$dir/log
clientPort=${ports[$((i-1))]}
clientPortAddress=127.0.0.1
maxClientCnxns=0
forceSync=yes
4lw.commands.whitelist=*
$lines
CFG
        echo "admin.enableServer=false" >> "$dir/zoo.cfg"
        if [ "$kind" = zookeeper ]; then
            SERVER_JVMFLAGS="-Xmx2g" ZOO_LOG_DIR="$dir" \
                "$zk_home/bin/zkServer.sh" start-foreground "$dir/zoo.cfg" > "$dir/out.log" 2>&1 &
        else
            "${PADDOCK_BIN:-./target/release/paddock}" --config "$dir/zoo.cfg" 2> "$dir/out.log" &
        fi
        pids+=("$!")
        server_pids+=("$!")
        hosts+="${hosts:+,}127.0.0.1:${ports[$((i-1))]}"
    done
    # Wait for a leader.
    for _ in $(seq 1 300); do
        for p in "${ports[@]}"; do
            if four_letter "$p" srvr 2>/dev/null | grep -q leader; then return 0; fi
        done
        sleep 0.2
    done
    echo "$kind ensemble did not elect a leader" >&2
    exit 1
}
