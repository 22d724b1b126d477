#!/usr/bin/env bash
# Installs what the tests drive, then runs the whole suite:
#
#   scripts/test.sh [cargo test arguments]
#
# The compatibility tests run the same sessions against Paddock and Apache ZooKeeper
# 3.8 (Debian's zookeeper package: the server, zkCli.sh and the jars; zookeeper-bin,
# its C client tools), through kazoo (a Python ZooKeeper client, from PyPI); the
# network-fault tests use nftables and iproute2; a real Prometheus server (Debian's
# prometheus) scrapes an ensemble's /metrics. Each is installed only if missing, so
# running this again installs nothing. Needs root (or sudo) for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        echo "scripts/test.sh: installing needs root: run as root, or: $*" >&2
        exit 1
    fi
}

missing=()
for package in zookeeper zookeeper-bin nftables iproute2 prometheus; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "ok installed" ||
        missing+=("$package")
done
# kazoo goes into the python3 the tests run; pip comes from Debian if that python lacks it.
if ! python3 -c 'import kazoo' 2>/dev/null && ! python3 -m pip --version >/dev/null 2>&1; then
    missing+=(python3-pip)
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "installing ${missing[*]}"
    as_root apt-get update -q
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
        "${missing[@]}" >/dev/null
fi
if ! python3 -c 'import kazoo' 2>/dev/null; then
    echo "installing kazoo"
    # Debian's own python3 refuses pip installs into it without the second form (PEP 668).
    python3 -m pip install -q kazoo 2>/dev/null ||
        python3 -m pip install -q --break-system-packages kazoo
fi

exec cargo test --workspace "$@"
