"""Behaviour scenarios driven through kazoo, a real ZooKeeper client.

Each scenario prints a transcript of what a client can observe: data, the parts of
Stat that do not depend on a server's zxid numbering, error names, and watch events
in the order they arrived. The Rust integration tests run the same scenario against
Paddock and against Apache ZooKeeper 3.8 and require identical transcripts (a
differential test), and also check the transcript's key lines.

usage: scenarios.py HOST:PORT SCENARIO
"""

import sys
import threading
import time

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.protocol.states import EventType
from kazoo.security import make_digest_acl, OPEN_ACL_UNSAFE

# Scenarios with clients on several servers get them separated by ";"; the rest
# connect to all of them.
SERVERS = sys.argv[1].split(";")
HOSTS = ",".join(SERVERS)
ROOT = "/scenario"
OUT = []


def say(*parts):
    line = " ".join(str(p) for p in parts)
    OUT.append(line)
    print(line, flush=True)


def stat_text(stat, session_id=None):
    """The Stat fields two servers agree on, whatever their zxid numbering."""
    owner = stat.ephemeralOwner
    if owner == 0:
        owner_text = "none"
    elif session_id is not None and owner == session_id:
        owner_text = "self"
    else:
        owner_text = "other"
    return (
        f"version={stat.version} cversion={stat.cversion} aversion={stat.aversion} "
        f"dataLength={stat.dataLength} numChildren={stat.numChildren} owner={owner_text} "
        f"created_by_last_change={stat.czxid == stat.mzxid} pzxid_ge_czxid={stat.pzxid >= stat.czxid}"
    )


def error_name(exc):
    return type(exc).__name__


def client(timeout=10.0, **kw):
    zk = KazooClient(hosts=HOSTS, timeout=timeout, connection_retry=None, command_retry=None, **kw)
    zk.start(timeout=15)
    return zk


def clean(zk):
    if zk.exists(ROOT):
        zk.delete(ROOT, recursive=True)
    zk.create(ROOT, b"")


def attempt(label, fn):
    try:
        result = fn()
        say(label, "ok", result if result is not None else "")
        return result
    except KazooException as exc:
        say(label, "error", error_name(exc))
        return None


def scenario_crud(zk):
    sid = zk.client_id[0]
    attempt("create", lambda: zk.create(f"{ROOT}/a", b"hello"))
    attempt("create-again", lambda: zk.create(f"{ROOT}/a", b"x"))
    attempt("create-no-parent", lambda: zk.create(f"{ROOT}/missing/child", b""))
    data, stat = zk.get(f"{ROOT}/a")
    say("get", data, stat_text(stat, sid))
    attempt("set-bad-version", lambda: zk.set(f"{ROOT}/a", b"v", version=7))
    stat = zk.set(f"{ROOT}/a", b"world", version=0)
    say("set", stat_text(stat, sid))
    attempt("create-child", lambda: zk.create(f"{ROOT}/a/b", b"1"))
    say("children", sorted(zk.get_children(f"{ROOT}/a")))
    say("parent", stat_text(zk.exists(f"{ROOT}/a"), sid))
    attempt("delete-not-empty", lambda: zk.delete(f"{ROOT}/a"))
    attempt("delete-bad-version", lambda: zk.delete(f"{ROOT}/a/b", version=3))
    attempt("delete-child", lambda: zk.delete(f"{ROOT}/a/b", version=0))
    say("parent-after-delete", stat_text(zk.exists(f"{ROOT}/a"), sid))
    attempt("delete", lambda: zk.delete(f"{ROOT}/a"))
    say("exists-after-delete", zk.exists(f"{ROOT}/a"))
    attempt("get-missing", lambda: zk.get(f"{ROOT}/a"))
    attempt("bad-path", lambda: zk.create(f"{ROOT}//x", b""))
    say("zookeeper-node", zk.exists("/zookeeper") is not None, "quota", zk.exists("/zookeeper/quota") is not None)
    attempt("delete-zookeeper", lambda: zk.delete("/zookeeper"))
    attempt("acl-default", lambda: [(a.perms, a.id.scheme, a.id.id) for a in zk.get_acls(ROOT)[0]])


def scenario_ephemeral_sequential(zk):
    sid = zk.client_id[0]
    paths = [zk.create(f"{ROOT}/seq-", b"", sequence=True) for _ in range(3)]
    say("sequential", [p[len(ROOT) + 1:] for p in paths])
    zk.delete(paths[1])
    say("after-delete", zk.create(f"{ROOT}/seq-", b"", sequence=True)[len(ROOT) + 1:])
    e = zk.create(f"{ROOT}/eph", b"e", ephemeral=True)
    say("ephemeral", stat_text(zk.exists(e), sid))
    attempt("child-of-ephemeral", lambda: zk.create(f"{e}/c", b""))
    es = zk.create(f"{ROOT}/eseq-", b"", ephemeral=True, sequence=True)
    say("ephemeral-sequential", es[len(ROOT) + 1:])
    other = client()
    say("other-sees", sorted(other.get_children(ROOT)))
    zk.stop()
    zk.close()
    say("after-close", sorted(other.get_children(ROOT)))
    other.stop()
    other.close()


def scenario_watches(zk):
    events = []
    cond = threading.Condition()

    def record(tag):
        def fn(event):
            with cond:
                events.append(f"{tag}:{event.type}:{event.path}")
                cond.notify_all()
        return fn

    def wait_for(n):
        deadline = time.time() + 10
        with cond:
            while len(events) < n and time.time() < deadline:
                cond.wait(0.1)

    writer = client()
    zk.exists(f"{ROOT}/w", watch=record("exists"))
    writer.create(f"{ROOT}/w", b"1")
    wait_for(1)
    zk.get(f"{ROOT}/w", watch=record("data"))
    zk.get_children(ROOT, watch=record("children"))
    writer.set(f"{ROOT}/w", b"2")
    wait_for(2)
    # The event must arrive before a later read that reflects the change.
    data, _ = zk.get(f"{ROOT}/w")
    say("read-after-event", data, "events-before-read", len(events))
    writer.set(f"{ROOT}/w", b"3")  # the data watch was one-shot: no event
    writer.create(f"{ROOT}/w2", b"")
    wait_for(3)
    zk.get(f"{ROOT}/w", watch=record("data2"))
    writer.delete(f"{ROOT}/w")
    wait_for(4)
    time.sleep(0.3)
    for e in events:
        say("event", e)
    writer.stop()
    writer.close()


def scenario_multi(zk):
    sid = zk.client_id[0]
    zk.create(f"{ROOT}/m", b"0")
    t = zk.transaction()
    t.create(f"{ROOT}/m/a", b"a")
    t.set_data(f"{ROOT}/m", b"1")
    t.check(f"{ROOT}/m", 1)
    t.delete(f"{ROOT}/m/a")
    results = t.commit()
    say("multi-ok", [r if not hasattr(r, "version") else stat_text(r, sid) for r in results])
    t = zk.transaction()
    t.create(f"{ROOT}/m/b", b"")
    t.check(f"{ROOT}/m", 99)
    t.create(f"{ROOT}/m/c", b"")
    results = t.commit()
    say("multi-fail", [error_name(r) if isinstance(r, Exception) else r for r in results])
    say("nothing-applied", zk.exists(f"{ROOT}/m/b") is None, zk.exists(f"{ROOT}/m/c") is None)
    t = zk.transaction()
    t.create(f"{ROOT}/m/d", b"")
    t.delete(f"{ROOT}/m/missing")
    results = t.commit()
    say("multi-fail-2", [error_name(r) if isinstance(r, Exception) else r for r in results])


def scenario_acl(zk):
    acl = make_digest_acl("alice", "secret", all=True)
    zk.create(f"{ROOT}/secure", b"s", acl=[acl])
    attempt("read-unauthenticated", lambda: zk.get(f"{ROOT}/secure")[0])
    attempt("write-unauthenticated", lambda: zk.set(f"{ROOT}/secure", b"x") and None)
    attempt("get-acl-unauthenticated", lambda: [(a.perms, a.id.scheme, a.id.id) for a in zk.get_acls(f"{ROOT}/secure")[0]])
    alice = client(auth_data=[("digest", "alice:secret")])
    attempt("read-alice", lambda: alice.get(f"{ROOT}/secure")[0])
    attempt("get-acl-alice", lambda: [(a.perms, a.id.scheme, a.id.id) for a in alice.get_acls(f"{ROOT}/secure")[0]])
    attempt("create-child-alice", lambda: alice.create(f"{ROOT}/secure/c", b""))
    bob = client(auth_data=[("digest", "bob:other")])
    attempt("read-bob", lambda: bob.get(f"{ROOT}/secure")[0])
    attempt("delete-child-bob", lambda: bob.delete(f"{ROOT}/secure/c"))
    attempt("set-acl-alice", lambda: alice.set_acls(f"{ROOT}/secure", OPEN_ACL_UNSAFE) and None)
    attempt("read-bob-after", lambda: bob.get(f"{ROOT}/secure")[0])
    attempt("creator-acl-unauthenticated", lambda: zk.create(f"{ROOT}/c2", b"", acl=[make_acl_auth()]))
    for c in (alice, bob):
        c.stop()
        c.close()


def make_acl_auth():
    from kazoo.security import ACL, Id
    return ACL(31, Id("auth", ""))


def scenario_expiry(zk):
    short = client(timeout=4.0)
    short.create(f"{ROOT}/mine", b"", ephemeral=True)
    say("ephemeral-present", zk.exists(f"{ROOT}/mine") is not None)
    # Drop the connection without closing the session: the client process "dies".
    short._connection._socket.close() if short._connection._socket else None
    short.stop = lambda: None
    deadline = time.time() + 20
    gone_after = None
    while time.time() < deadline:
        if zk.exists(f"{ROOT}/mine") is None:
            gone_after = True
            break
        time.sleep(0.2)
    say("ephemeral-removed-by-expiry", gone_after)


def scenario_reattach(zk):
    first = client(timeout=10.0)
    first.create(f"{ROOT}/held", b"", ephemeral=True)
    session_id, passwd = first.client_id
    # A second client object reattaches to the same session with its password.
    second = KazooClient(hosts=HOSTS, client_id=(session_id, passwd), timeout=10.0, connection_retry=None, command_retry=None)
    second.start(timeout=15)
    say("same-session", second.client_id[0] == session_id)
    say("ephemeral-kept", second.exists(f"{ROOT}/held") is not None)
    wrong = KazooClient(hosts=HOSTS, client_id=(session_id, b"0" * 16), timeout=10.0, connection_retry=None, command_retry=None)
    try:
        wrong.start(timeout=5)
        say("wrong-password", "connected", wrong.client_id[0] == session_id)
    except Exception as exc:  # noqa: BLE001 - any failure to connect is the expected outcome
        say("wrong-password", "refused", type(exc).__name__)
    finally:
        try:
            wrong.stop()
            wrong.close()
        except Exception:  # noqa: BLE001
            pass
    second.stop()
    second.close()


def try_lock(lock, timeout):
    from kazoo.exceptions import LockTimeout
    try:
        return lock.acquire(timeout=timeout)
    except LockTimeout:
        return False


def scenario_lock(zk):
    other = client(timeout=4.0)
    lock_a = zk.Lock(f"{ROOT}/lock", "a")
    lock_b = other.Lock(f"{ROOT}/lock", "b")
    say("a-acquires", try_lock(lock_a, 5))
    say("b-blocked", try_lock(lock_b, 1))
    lock_a.release()
    say("b-acquires-after-release", try_lock(lock_b, 5))
    say("a-blocked", try_lock(lock_a, 1))
    # b's process dies: its session expires and a gets the lock.
    other._connection._socket.close() if other._connection._socket else None
    other.stop = lambda: None
    say("a-acquires-after-expiry", try_lock(lock_a, 20))
    lock_a.release()


def scenario_cross_server(zk):
    """Clients pinned to different servers of an ensemble."""
    one, two, three = (
        KazooClient(hosts=h, timeout=10.0, connection_retry=None, command_retry=None) for h in SERVERS[:3]
    )
    for c in (one, two, three):
        c.start(timeout=15)
    fired = {}
    done = threading.Event()

    def remember(tag):
        def fn(event):
            fired[tag] = f"{event.type} {event.path}"
            if len(fired) == 2:
                done.set()
        return fn

    one.create("/cross", b"")
    two.sync("/cross")
    two.get_children("/cross", watch=remember("child-watch-on-2"))
    one.create("/cross/a", b"1")
    three.sync("/cross/a")
    three.get("/cross/a", watch=remember("data-watch-on-3"))
    one.set("/cross/a", b"2")
    done.wait(10)
    for tag in sorted(fired):
        say(tag, fired[tag])
    three.sync("/cross/a")
    say("read-on-3-after-sync", three.get("/cross/a")[0])
    one.create("/cross/e", b"", ephemeral=True)
    two.sync("/cross/e")
    say("ephemeral-seen-on-2", two.exists("/cross/e") is not None)
    one.delete("/cross", recursive=True)
    for c in (one, two, three):
        c.stop()
        c.close()


def scenario_null_data(zk):
    """Null data (a -1 buffer on the wire) stays null, apart from empty data."""
    if zk.exists("/nulldata"):
        zk.delete("/nulldata", recursive=True)
    zk.create("/nulldata", None)
    data, stat = zk.get("/nulldata")
    say("create-null", repr(data), "dataLength", stat.dataLength)
    zk.set("/nulldata", b"")
    data, stat = zk.get("/nulldata")
    say("set-empty", repr(data), "dataLength", stat.dataLength)
    zk.set("/nulldata", None)
    say("set-null", repr(zk.get("/nulldata")[0]))
    zk.create(f"{ROOT}/empty", b"")
    say("create-empty", repr(zk.get(f"{ROOT}/empty")[0]))


def scenario_null_data_read(zk):
    """Reads what null_data left in /nulldata (after a restart, from the log)."""
    say("null-after-restart", repr(zk.get("/nulldata")[0]))
    zk.delete("/nulldata")


def scenario_big_children(zk):
    """A getChildren reply larger than jute.maxbuffer (1 MiB): ZooKeeper serves it."""
    base = f"{ROOT}/big"
    zk.create(base, b"")
    names = [f"child-with-a-longish-name-{i:06d}" for i in range(49000)]
    for start in range(0, len(names), 2000):
        pending = [zk.create_async(f"{base}/{n}", b"") for n in names[start:start + 2000]]
        for p in pending:
            p.get(timeout=60)
    children = zk.get_children(base)
    say("children", len(children), "reply-bytes", 4 + sum(4 + len(c) for c in children))
    for start in range(0, len(names), 2000):
        pending = [zk.delete_async(f"{base}/{n}") for n in names[start:start + 2000]]
        for p in pending:
            p.get(timeout=60)


def scenario_addauth_ip(zk):
    """addauth ip: ZooKeeper's ip provider accepts it (the caller's address)."""
    attempt("addauth-ip", lambda: zk.add_auth("ip", "127.0.0.1"))
    attempt("after-addauth-ip", lambda: zk.exists("/") is not None)
    attempt("addauth-unknown-scheme", lambda: zk.add_auth("nosuchscheme", "x"))
    say("connected-after-unknown", zk.connected)


def scenario_config(zk):
    """/zookeeper/config as Curator's ensemble tracker and zkCli's config read it."""
    data, stat = zk.get("/zookeeper/config")
    for line in data.decode().splitlines():
        say("config", line)
    say("config-dataLength-matches", stat.dataLength == len(data))


SCENARIOS = {
    name[len("scenario_"):]: fn for name, fn in globals().items() if name.startswith("scenario_")
}


def main():
    name = sys.argv[2]
    zk = client()
    clean(zk)
    try:
        SCENARIOS[name](zk)
    finally:
        try:
            if zk.connected:
                zk.delete(ROOT, recursive=True)
                zk.stop()
                zk.close()
        except Exception:  # noqa: BLE001 - best-effort cleanup
            pass


if __name__ == "__main__":
    main()
