"""The rendezvous of a job's ranks before NCCL is called, and the channel between the
launchers of a job on several nodes.

Every rank connects to the master address (MASTER_ADDR:MASTER_PORT) over TCP and says who it
is; rank 0 brings NCCL's unique id.  Once every rank of the world has come, each gets the id;
after the timeout instead, each gets the list of the ranks that did not come, and raises
TimeoutError naming them: NCCL is never called with a rank missing, so no rank waits in
ncclCommInitRank for one that will never come.  The server is gpuhost's launcher on node 0
(``python -m gpuhost.launch``), or rank 0 itself under torchrun (without its agent's store),
Slurm and MPI; under torchrun's agent store, the exchange goes through torch's TCPStore.

Why this rather than NCCL's own NCCL_COMM_ID bootstrap (where rank 0 listens at a fixed
address and the others connect to it): with NCCL_COMM_ID no rank can tell which rank is
missing (each only sees that the bootstrap does not finish), a rank 0 that never starts
leaves the others in NCCL's connect retries, and nothing is checked before NCCL runs.  The
exchange here is small (one connection per rank, one message each way, bounded in time),
needs no shared folder and no MPI, and checks the ranks agree (world size, no rank twice).

Messages are JSON, each preceded by its length (4 bytes, big-endian).
"""
import errno
import ipaddress
import json
import os
import queue
import socket
import struct
import threading
import time

__all__ = ["Server", "Agent", "exchange", "listen"]

MAGIC = "gpuhost-rendezvous"
VERSION = 1
MAX_MESSAGE = 1 << 20


def _send(sock, obj):
    data = json.dumps(obj).encode()
    sock.sendall(struct.pack("!I", len(data)) + data)


def _recv_exact(sock, n, deadline):
    buf = b""
    while len(buf) < n:
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer in time")
            sock.settimeout(left)
        else:
            sock.settimeout(None)
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def _recv(sock, deadline=None):
    """One message, or None at the end of the stream; TimeoutError past `deadline`
    (time.monotonic()); ValueError for a message that is not one of ours."""
    head = _recv_exact(sock, 4, deadline)
    if head is None:
        return None
    (n,) = struct.unpack("!I", head)
    if n > MAX_MESSAGE:
        raise ValueError("a rendezvous message of %d bytes" % n)
    body = _recv_exact(sock, n, deadline)
    if body is None:
        return None
    msg = json.loads(body.decode())
    if not isinstance(msg, dict):
        raise ValueError("not a rendezvous message")
    return msg


def _is_loopback(host):
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def listen(host, port, what):
    """A listening socket for `host`:`port` (port 0: a free one the system picks): on the
    loopback address itself when `host` is one, else on every interface (`host` may name
    this machine differently from where the others reach it).  OSError naming `what` and the
    address when the port is taken (errno EADDRINUSE) or cannot be had."""
    ipv6 = ":" in host
    family = socket.AF_INET6 if ipv6 else socket.AF_INET
    bind_host = host if _is_loopback(host) else ("::" if ipv6 else "")
    if host == "localhost":
        bind_host = "127.0.0.1"
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((bind_host, port))
        sock.listen(128)
    except OSError as e:
        sock.close()
        if e.errno == errno.EADDRINUSE:
            raise OSError(errno.EADDRINUSE,
                          "%s cannot listen on %s:%d for the rendezvous: the port is in use "
                          "(another job there, or this one started twice?); choose a free port "
                          "(--master-port, MASTER_PORT)" % (what, host, port)) from None
        raise OSError(e.errno, "%s cannot listen on %s:%d for the rendezvous: %s"
                      % (what, host, port, e.strerror)) from None
    return sock


def _ranks(ranks):
    ranks = sorted(ranks)
    return ("rank %d" % ranks[0]) if len(ranks) == 1 else \
        "ranks " + ", ".join(str(r) for r in ranks)


class _Session:
    """One rendezvous: the ranks that came, and its outcome once known."""

    def __init__(self, world, deadline):
        self.world = world
        self.deadline = deadline
        self.arrived = {}  # rank -> hello
        self.result = None  # the answer every rank gets


class Server:
    """The rendezvous, served at host:port by threads of its own until close().

    Ranks join sessions (the n-th Communicator.from_env() of each rank is session n); in a
    launcher, the other nodes' launchers also connect (`Agent`): `wait_nodes` waits for
    them, `stop_nodes` tells them to stop their ranks, and `events` receives what they
    report ("done", "failed", or "lost" when one goes away).
    """

    def __init__(self, host, port, what="rank 0"):
        self.sock = listen(host, port, what)
        self.host = host
        self.port = self.sock.getsockname()[1]
        self.events = queue.Queue()
        self._cond = threading.Condition()
        self._sessions = {}
        self._agents = {}  # node rank -> socket
        self._nnodes = None
        self._go = False
        self._closed = False
        self._answering = 0  # ranks' connections not yet answered
        threading.Thread(target=self._accept, name="gpuhost-rendezvous", daemon=True).start()

    @property
    def address(self):
        return "%s:%d" % (self.host, self.port)

    def close(self, drain=5.0):
        """Stop listening; first let the ranks still connected get their answers (`drain`
        seconds at most: the process may exit right after)."""
        try:
            self.sock.close()
        except OSError:
            pass
        deadline = time.monotonic() + drain
        with self._cond:
            while self._answering and time.monotonic() < deadline:
                self._cond.wait(max(0.0, deadline - time.monotonic()))
            self._closed = True
            self._cond.notify_all()

    def _accept(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn):
        try:
            hello = _recv(conn, time.monotonic() + 30)
            if not hello or hello.get("magic") != MAGIC or hello.get("version") != VERSION:
                return  # not one of ours
            if hello.get("kind") == "rank":
                with self._cond:
                    self._answering += 1
                try:
                    _send(conn, self._rank(hello))
                finally:
                    with self._cond:
                        self._answering -= 1
                        self._cond.notify_all()
            elif hello.get("kind") == "agent":
                self._agent(conn, hello)
        except (OSError, ValueError, TypeError, KeyError):
            pass
        finally:
            conn.close()

    # ---- ranks ----

    def _fail(self, session, kind, message):
        if session.result is None:
            session.result = {"ok": False, "error": kind, "message": message}
            self._cond.notify_all()

    def _rank(self, hello):
        rank, world = int(hello["rank"]), int(hello["world_size"])
        now = time.monotonic()
        with self._cond:
            s = self._sessions.get(hello["session"])
            if s is None:
                s = self._sessions[hello["session"]] = _Session(
                    world, now + float(hello["timeout"]))
            first = s.arrived.get(0) or next(iter(s.arrived.values()), None)
            if s.result is not None:
                pass  # a late rank of a session already decided
            elif world != s.world:
                (a, wa), (b, wb) = sorted([(rank, world), (int(first["rank"]), s.world)])
                self._fail(s, "mismatch", "the ranks disagree on the world size: rank %d has "
                           "WORLD_SIZE %d, rank %d has %d" % (a, wa, b, wb))
            elif not 0 <= rank < world:
                self._fail(s, "mismatch", "rank %d is not below the world size %d" % (rank, world))
            elif rank in s.arrived:
                other = s.arrived[rank]
                self._fail(s, "mismatch", "two processes say they are rank %d (pid %s on %s, "
                           "pid %s on %s)" % (rank, other["pid"], other["host"], hello["pid"],
                                              hello["host"]))
            else:
                s.arrived[rank] = hello
                if len(s.arrived) == world:
                    s.result = {"ok": True, "uid": s.arrived[0]["uid"],
                                "hosts": [s.arrived[r]["host"] for r in range(world)]}
                    self._cond.notify_all()
            while s.result is None and not self._closed:
                left = s.deadline - time.monotonic()
                if left <= 0:
                    missing = sorted(set(range(world)) - set(s.arrived))
                    self._fail(s, "timeout", "%s did not arrive at the rendezvous at %s within "
                               "%g s (%s did); NCCL was not called"
                               % (_ranks(missing), self.address, float(hello["timeout"]),
                                  _ranks(s.arrived)))
                    s.result["missing"] = missing
                    break
                self._cond.wait(left)
            return s.result or {"ok": False, "error": "closed",
                                "message": "the rendezvous at %s closed" % self.address}

    # ---- other launchers ----

    def _agent(self, conn, hello):
        node = int(hello["node_rank"])
        with self._cond:
            while self._nnodes is None and not self._closed:  # not yet waiting for nodes
                self._cond.wait(1)
            if self._nnodes is None or int(hello["nnodes"]) != self._nnodes or node in \
                    self._agents or not 0 < node < self._nnodes:
                _send(conn, {"kind": "error", "message": "node rank %d (of --nnodes %s) does not "
                             "fit the job of node 0 (--nnodes %s; nodes %s already joined)"
                             % (node, hello["nnodes"], self._nnodes, sorted(self._agents))})
                return
            self._agents[node] = conn
            self._cond.notify_all()
            while not self._go and not self._closed:
                self._cond.wait(1)
            if not self._go:
                return
        _send(conn, {"kind": "go"})
        while True:
            try:
                msg = _recv(conn)
            except (OSError, ValueError):
                msg = None
            if msg is None:
                self.events.put(("lost", node, 1, "node %d's launcher went away" % node))
                return
            if msg.get("kind") == "status":
                self.events.put((msg["state"], node, int(msg.get("code", 0)), msg.get("why", "")))
                if msg["state"] in ("done", "failed"):
                    return

    def wait_nodes(self, nnodes, timeout):
        """Wait for the launchers of nodes 1 to nnodes-1; then tell them to start.  The node
        ranks that did not come within `timeout` seconds (none: all came)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            self._nnodes = nnodes
            self._cond.notify_all()
            while len(self._agents) < nnodes - 1 and time.monotonic() < deadline:
                self._cond.wait(max(0.0, min(1.0, deadline - time.monotonic())))
            missing = sorted(set(range(1, nnodes)) - set(self._agents))
            if not missing:
                self._go = True
                self._cond.notify_all()
            return missing

    def stop_nodes(self, why, code):
        """Tell every other node's launcher to stop its ranks."""
        with self._cond:
            agents = list(self._agents.values())
        for conn in agents:
            try:
                _send(conn, {"kind": "stop", "why": why, "code": code})
            except OSError:
                pass


class Agent:
    """A launcher of node k > 0, connected to node 0's (its Server): joins within `timeout`
    seconds, then reports its ranks' outcome; `events` receives ("stop", code, why) when
    node 0 says to stop, or ("lost", 1, why) when node 0's launcher goes away."""

    def __init__(self, host, port, node_rank, nnodes, timeout):
        deadline = time.monotonic() + timeout
        self.events = queue.Queue()
        self.sock = _connect(host, port, deadline,
                             "node 0's launcher (the rendezvous at %s:%d) did not answer within "
                             "%g s: start it (--node-rank 0), or check --master-addr and "
                             "--master-port" % (host, port, timeout))
        _send(self.sock, {"magic": MAGIC, "version": VERSION, "kind": "agent",
                          "node_rank": node_rank, "nnodes": nnodes, "host": socket.gethostname()})
        try:
            msg = _recv(self.sock, deadline)
        except TimeoutError:
            msg = {"kind": "error", "message": "not every node joined within %g s" % timeout}
        if msg is None:
            msg = {"kind": "error", "message": "node 0's launcher closed the connection"}
        if msg.get("kind") != "go":
            self.sock.close()
            raise RuntimeError("node %d: %s" % (node_rank, msg.get("message")))
        threading.Thread(target=self._listen, daemon=True).start()

    def _listen(self):
        try:
            msg = _recv(self.sock)
        except (OSError, ValueError):
            msg = None
        if msg is not None and msg.get("kind") == "stop":
            self.events.put(("stop", int(msg.get("code", 1)), msg.get("why", "")))
        else:
            self.events.put(("lost", 1, "node 0's launcher went away"))

    def report(self, state, code=0, why=""):
        try:
            _send(self.sock, {"kind": "status", "state": state, "code": code, "why": why})
        except OSError:
            pass

    def close(self):
        self.sock.close()


def _connect(host, port, deadline, late_message):
    """A connection to host:port, retried until `deadline` (the server may start later);
    TimeoutError(late_message) then.  ValueError when the host does not resolve."""
    while True:
        left = deadline - time.monotonic()
        try:
            return socket.create_connection((host, port), timeout=max(0.05, min(2.0, left)))
        except socket.gaierror as e:
            raise ValueError("MASTER_ADDR=%r does not resolve to an address: %s" % (host, e)) \
                from None
        except OSError:
            if time.monotonic() >= deadline:
                raise TimeoutError(late_message) from None
            time.sleep(0.05)


def exchange(job, timeout, make_uid, session, store=None):
    """Rank `job.rank`'s part of rendezvous `session` (see the module's docstring): rank 0
    calls make_uid() and every rank gets its bytes.  Within `timeout` seconds, or
    TimeoutError naming the ranks that did not come; ValueError when the ranks disagree;
    OSError when rank 0 cannot listen (its port taken).  `store`: a torch.distributed Store
    to use instead of the server (torchrun's agent store)."""
    if job.host == "torch" or store is not None:
        return _store_exchange(job, timeout, make_uid, session, store)
    server = None
    if job.host == "rank0" and job.rank == 0:
        server = Server(job.master_addr, job.master_port, "rank 0")
    try:
        return _join(job, timeout, make_uid() if job.rank == 0 else None, session)
    finally:
        if server is not None:
            server.close()


def _join(job, timeout, uid, session):
    deadline = time.monotonic() + timeout
    who = "rank %d of %d" % (job.rank, job.world_size)
    where = "%s:%d" % (job.master_addr, job.master_port)
    host_of = ("the node-0 launcher hosts it" if job.host == "launcher"
               else "rank 0 hosts it: it never started, or it gave up waiting, or MASTER_ADDR "
                    "and MASTER_PORT do not name it")
    hello = {"magic": MAGIC, "version": VERSION, "kind": "rank", "session": session,
             "rank": job.rank, "world_size": job.world_size, "local_rank": job.local_rank,
             "host": socket.gethostname(), "pid": os.getpid(), "timeout": timeout,
             "uid": uid.hex() if uid is not None else None}
    while True:
        late = "%s: nothing answered at the rendezvous at %s within %g s (%s)" % (
            who, where, timeout, host_of)
        sock = _connect(job.master_addr, job.master_port, deadline, late)
        try:
            _send(sock, hello)
            reply = _recv(sock, deadline + 10)  # the server answers at its own deadline
        except TimeoutError:
            raise TimeoutError(late) from None
        except (OSError, ValueError):
            reply = None
        finally:
            sock.close()
        if reply is None or reply.get("error") == "closed":  # the server went: try again
            if time.monotonic() >= deadline:
                raise TimeoutError(late)
            time.sleep(0.05)
            continue
        if reply.get("ok"):
            return bytes.fromhex(reply["uid"])
        cls = TimeoutError if reply.get("error") == "timeout" else ValueError
        raise cls("%s: %s" % (who, reply.get("message")))


def _store_exchange(job, timeout, make_uid, session, store):
    """The rendezvous through a torch.distributed Store (set / get / check)."""
    if store is None:
        from datetime import timedelta

        import torch.distributed as dist

        store = dist.TCPStore(job.master_addr, job.master_port, job.world_size, False,
                              timedelta(seconds=timeout), wait_for_workers=False)
    prefix = "gpuhost/nccl/%s/%s/%d/" % (os.environ.get("TORCHELASTIC_RUN_ID", "run"),
                                         os.environ.get("TORCHELASTIC_RESTART_COUNT", "0"),
                                         session)
    who = "rank %d of %d" % (job.rank, job.world_size)
    deadline = time.monotonic() + timeout
    mine = {"world_size": job.world_size, "host": socket.gethostname(), "pid": os.getpid()}
    store.set(prefix + "rank%d" % job.rank, json.dumps(mine))
    if job.rank == 0:
        uid = make_uid()
        while True:
            missing = [r for r in range(job.world_size) if not store.check([prefix + "rank%d" % r])]
            if not missing:
                break
            if time.monotonic() >= deadline:
                raise TimeoutError("%s: %s did not arrive at the rendezvous (torchrun's store at "
                                   "%s:%d) within %g s; NCCL was not called"
                                   % (who, _ranks(missing), job.master_addr, job.master_port,
                                      timeout))
            time.sleep(0.05)
        for r in range(job.world_size):
            theirs = json.loads(store.get(prefix + "rank%d" % r))
            if theirs["world_size"] != job.world_size:
                store.set(prefix + "error", "the ranks disagree on the world size: rank %d has "
                          "WORLD_SIZE %d, rank 0 has %d" % (r, theirs["world_size"],
                                                            job.world_size))
                raise ValueError("%s: %s" % (who, store.get(prefix + "error").decode()))
        store.set(prefix + "uid", uid.hex())
        return uid
    while not store.check([prefix + "uid"]):
        if store.check([prefix + "error"]):
            raise ValueError("%s: %s" % (who, store.get(prefix + "error").decode()))
        if time.monotonic() >= deadline:
            missing = [r for r in range(job.world_size) if not store.check([prefix + "rank%d" % r])]
            raise TimeoutError("%s: %s did not arrive at the rendezvous (torchrun's store at "
                               "%s:%d) within %g s; NCCL was not called"
                               % (who, _ranks(missing) if missing else "rank 0 did not hand "
                                  "out the unique id: not every rank", job.master_addr,
                                  job.master_port, timeout))
        time.sleep(0.05)
    return bytes.fromhex(store.get(prefix + "uid").decode())
