"""kazoo over TLS (use_ssl=True), for tests/it/tls.rs; the transcript must be the
same against Paddock and Apache ZooKeeper 3.8.

usage: tls.py HOST:PORT CA_PEM SCENARIO [CLIENT_PEM]
  CLIENT_PEM holds the client's certificate and key (a ZooKeeper PEM key store).
  SCENARIO: write (create a node only CN=client,O=Paddock may use, read it back)
            or read (read that node).
"""

import sys

from kazoo.client import KazooClient
from kazoo.exceptions import KazooException
from kazoo.security import ACL, Id

hosts, ca, scenario = sys.argv[1], sys.argv[2], sys.argv[3]
cert = sys.argv[4] if len(sys.argv) > 4 else None
zk = KazooClient(
    hosts=hosts,
    timeout=10.0,
    connection_retry=None,
    command_retry=None,
    use_ssl=True,
    verify_certs=True,
    ca=ca,
    certfile=cert,
    keyfile=cert,
)
try:
    zk.start(timeout=10)
except Exception as e:  # a refused handshake surfaces as a connect time-out
    print("connect failed")
    sys.exit(0)
print("connected")
try:
    if scenario == "write":
        acl = [ACL(31, Id("x509", "CN=client,O=Paddock"))]
        print("create", zk.create("/kazoo-tls", b"secret", acl=acl))
        print("acl", [(a.perms, a.id.scheme, a.id.id) for a in zk.get_acls("/kazoo-tls")[0]])
    print("get", zk.get("/kazoo-tls")[0])
except KazooException as e:
    print("error", type(e).__name__)
zk.stop()
zk.close()
