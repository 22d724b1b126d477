#!/usr/bin/env bash
# The three-server Paddock ensemble of conf/zoo{1,2,3}.cfg on 127.0.0.1 (clients on
# ports 2181-2183; metrics, admin commands and health checks over HTTP on 8081-8083).
#
#   scripts/ensemble.sh             build, start all three and watch them; Ctrl-C or
#                                   SIGTERM stops all three
#   scripts/ensemble.sh restart N   stop server N if it runs, start it again (works from
#                                   another terminal while the command above runs)
#   scripts/ensemble.sh stop [N]    stop server N, or all three
#   scripts/ensemble.sh status      which servers run
#
# Under run/ at the repository root: zooN.log (appended to, never overwritten; each
# start is marked), zooN.pid (the running server's pid), zooN.exit (the exit status of
# its last run), and the data dirs the configs name. When a server dies the others keep
# running; the watcher says which one died, its exit status and its last log lines.
#
# Environment: PADDOCK_BIN, a paddock binary to run instead of building one;
# PADDOCK_CONF_DIR (default conf/) and PADDOCK_RUN_DIR (default run/), so tests can run
# the script on their own ports.
set -euo pipefail
cd "$(dirname "$0")/.."

conf_dir=${PADDOCK_CONF_DIR:-conf}
run_dir=${PADDOCK_RUN_DIR:-run}
servers=(1 2 3)
# How long a server may take to stop after SIGTERM (Paddock bounds it at 20 s).
stop_wait_s=30

usage() {
    sed -n '4,9p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
}

binary() {
    if [ -n "${PADDOCK_BIN:-}" ]; then
        echo "$PADDOCK_BIN"
    else
        echo "$PWD/target/release/paddock"
    fi
}

check_id() {
    case "$1" in
        1 | 2 | 3) ;;
        *)
            echo "no server $1: the ensemble has servers 1, 2 and 3" >&2
            exit 2
            ;;
    esac
}

# The running pid of server N, or nothing.
running_pid() {
    local pid
    pid=$(cat "$run_dir/zoo$1.pid" 2>/dev/null) || return 0
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        echo "$pid"
    fi
}

# dataDir from zooN.cfg, resolved against the file's directory as Paddock does.
data_dir() {
    local dir
    dir=$(sed -n 's/^[[:space:]]*dataDir[[:space:]]*[=:][[:space:]]*//p' "$conf_dir/zoo$1.cfg" | tail -n 1)
    case "$dir" in
        /*) echo "$dir" ;;
        *) echo "$conf_dir/$dir" ;;
    esac
}

# Starts server N in the background, detached from this shell's terminal session so
# it outlives the command that started it. A small wrapper records its pid and, when
# it ends, its exit status.
start() {
    local n=$1 bin log data
    bin=$(binary)
    log="$run_dir/zoo$n.log"
    data=$(data_dir "$n")
    mkdir -p "$data"
    echo "$n" >"$data/myid"
    rm -f "$run_dir/zoo$n.exit" "$run_dir/zoo$n.stopping"
    echo "==== $(date '+%Y-%m-%d %H:%M:%S') starting server $n: $bin $conf_dir/zoo$n.cfg" >>"$log"
    setsid bash -c '
        "$1" "$2" >>"$3" 2>&1 </dev/null &
        pid=$!
        echo "$pid" >"$4.pid"
        wait "$pid"
        echo "$?" >"$4.exit"
    ' wrapper "$bin" "$conf_dir/zoo$n.cfg" "$log" "$run_dir/zoo$n" </dev/null >/dev/null 2>&1 &
    # The pid file exists once the server has been forked.
    local i
    for i in $(seq 1 100); do
        [ -s "$run_dir/zoo$n.pid" ] && [ "$(running_pid "$n")" != "" ] && break
        [ -e "$run_dir/zoo$n.exit" ] && break
        sleep 0.05
    done
}

# Stops server N: SIGTERM, then SIGKILL if it has not gone within stop_wait_s.
stop_one() {
    local n=$1 pid i
    pid=$(running_pid "$n")
    [ -n "$pid" ] || return 0
    # So that the watcher reports a stop asked for, not a crash.
    touch "$run_dir/zoo$n.stopping"
    kill -TERM "$pid" 2>/dev/null || return 0
    for i in $(seq 1 $((stop_wait_s * 10))); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.1
    done
    echo "server $n (pid $pid) did not stop within ${stop_wait_s}s: killing it" >&2
    kill -KILL "$pid" 2>/dev/null || true
}

# "status 1", or "signal KILL" for a status past 128.
describe_exit() {
    local status=$1
    if [ "$status" -gt 128 ] 2>/dev/null; then
        echo "signal $(kill -l $((status - 128)) 2>/dev/null || echo $((status - 128)))"
    else
        echo "status $status"
    fi
}

report_exit() {
    local n=$1 pid=$2 status
    if [ -e "$run_dir/zoo$n.stopping" ]; then
        echo "server $n (pid $pid) stopped as asked"
        return 0
    fi
    status=$(cat "$run_dir/zoo$n.exit" 2>/dev/null || echo "unknown")
    if [ "$status" = "unknown" ]; then
        echo "server $n (pid $pid) exited"
    else
        echo "server $n (pid $pid) exited with $(describe_exit "$status")"
    fi
    echo "  last lines of $run_dir/zoo$n.log:"
    tail -n 10 "$run_dir/zoo$n.log" | sed 's/^/    /'
    echo "  the others keep running; start it again with: scripts/ensemble.sh restart $n"
}

# Watches the servers until all have exited or a signal stops the ensemble.
watch_servers() {
    declare -A seen
    local n pid alive
    while true; do
        alive=0
        for n in "${servers[@]}"; do
            pid=$(running_pid "$n")
            if [ -n "$pid" ]; then
                alive=$((alive + 1))
                if [ "${seen[$n]:-}" != "$pid" ]; then
                    [ -z "${seen[$n]:-}" ] || echo "server $n is running again (pid $pid)"
                    seen[$n]=$pid
                fi
            elif [ -n "${seen[$n]:-}" ] && [ "${seen[$n]}" != "gone" ]; then
                # The wrapper writes the exit status just after the process ends.
                for _ in 1 2 3 4 5 6 7 8 9 10; do
                    [ -e "$run_dir/zoo$n.exit" ] && break
                    sleep 0.1
                done
                report_exit "$n" "${seen[$n]}"
                seen[$n]=gone
            fi
        done
        if [ "$alive" -eq 0 ]; then
            echo "all servers have exited; see $run_dir/zoo*.log"
            return 1
        fi
        sleep 1
    done
}

stop_all() {
    trap - INT TERM
    kill "$watcher" 2>/dev/null || true
    echo "stopping the ensemble"
    local n
    for n in "${servers[@]}"; do stop_one "$n" & done
    wait
    exit 0
}

command=${1:-run}
mkdir -p "$run_dir"
case "$command" in
    run)
        [ $# -le 1 ] || usage
        if [ -z "${PADDOCK_BIN:-}" ]; then
            cargo build --release --bin paddock
        fi
        for n in "${servers[@]}"; do
            if [ -n "$(running_pid "$n")" ]; then
                echo "server $n already runs (pid $(running_pid "$n")): scripts/ensemble.sh stop first" >&2
                exit 1
            fi
        done
        trap stop_all INT TERM
        for n in "${servers[@]}"; do start "$n"; done
        echo "ensemble running: clients at 127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183 (logs in $run_dir/)"
        echo "metrics, admin commands and health checks at http://127.0.0.1:8081, :8082, :8083 (/metrics, /commands/mntr, /health/ready)"
        echo "press Ctrl-C to stop; restart one server with: scripts/ensemble.sh restart N"
        # In the background, so that a signal runs the trap at once.
        watch_servers &
        watcher=$!
        wait "$watcher" || exit 1
        ;;
    restart)
        [ $# -eq 2 ] || usage
        check_id "$2"
        stop_one "$2"
        start "$2"
        pid=$(running_pid "$2")
        if [ -n "$pid" ]; then
            echo "server $2 started (pid $pid); log in $run_dir/zoo$2.log"
        else
            echo "server $2 did not start: $(describe_exit "$(cat "$run_dir/zoo$2.exit" 2>/dev/null || echo 1)")" >&2
            tail -n 10 "$run_dir/zoo$2.log" >&2
            exit 1
        fi
        ;;
    stop)
        if [ $# -eq 2 ]; then
            check_id "$2"
            stop_one "$2"
        else
            [ $# -eq 1 ] || usage
            for n in "${servers[@]}"; do stop_one "$n" & done
            wait
        fi
        ;;
    status)
        for n in "${servers[@]}"; do
            pid=$(running_pid "$n")
            if [ -n "$pid" ]; then
                echo "server $n: running (pid $pid)"
            elif [ -e "$run_dir/zoo$n.exit" ]; then
                echo "server $n: exited with $(describe_exit "$(cat "$run_dir/zoo$n.exit")")"
            else
                echo "server $n: not running"
            fi
        done
        ;;
    *) usage ;;
esac
