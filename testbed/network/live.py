"""A `Topology` as a live Mininet network: every node a Linux host/router in its own namespace.

No Open vSwitch, no controller, no bridges: veth pairs are created straight inside their two
namespaces, each namespace is configured by one `ip -batch`, one `tc -batch`, one `ethtool -K`
script and its sysctls (written from a thread inside it), run in parallel across nodes.
Teardown kills every process in our namespaces (the namespaces and their veths then vanish
with them), so it removes exactly what we created.

    with live_network(fattree(4), seed=1) as net:
        net.exec("h1", ["ping", "-c1", net.topo.host_ip("h16")])
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_EXCEPTION, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path

from mininet.link import Intf
from mininet.net import Mininet
from mininet.node import Host

from testbed.base.capabilities import probe
from testbed.base.kernel import KernelError, run, run_batch
from testbed.base.nsenter import in_netns, offloads_off, write_sysctls
from testbed.base.signals import Handlers
from testbed.base.statedir import StateDir, netns_inode, pids_in_netns
from testbed.network import netplan
from topologies import Topology

__all__ = ["KernelError", "LiveNetwork", "Terminated", "live_network"]

HASH_SEED_SYSCTL = Path("/proc/sys/net/ipv4/fib_multipath_hash_seed")
RTO_MIN_SYSCTL = Path("/proc/sys/net/ipv4/tcp_rto_min_us")
CONFIG_WORKERS = 8
STEP_TIMEOUT_S = 30.0


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised like Ctrl-C so that one cleanup path serves both; `signum` says which."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


class _Mininet(Mininet):
    """Mininet without its start-up tuning: `fixLimits` raises sysctls of the *root* namespace,
    which is not ours to change. We only raise our own process's file limit."""

    @classmethod
    def init(cls) -> None:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft < min(hard, 16384):
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 16384), hard))


class _Signals(Handlers):
    """SIGINT/SIGTERM while we bring up or tear down are deferred to safe points, so nothing
    is created unrecorded and teardown is never cut short; in between they raise at once.
    One deferred but never raised is handed on at exit."""

    def __init__(self) -> None:
        super().__init__()
        self.pending: int | None = None
        self.deferring = True

    def __enter__(self) -> _Signals:
        super().__enter__()
        return self

    def _unhandled(self) -> int | None:
        signum, self.pending = self.pending, None
        return signum

    def _handle(self, signum: int, _frame: object) -> None:
        if self.deferring:
            self.pending = self.pending or signum
            return
        self._raise(signum)

    @staticmethod
    def _raise(signum: int) -> None:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise Terminated(signum)

    def checkpoint(self) -> None:
        if self.pending is not None:
            signum, self.pending = self.pending, None
            self._raise(signum)

    def live(self) -> None:
        """Leave the deferred mode; a signal that arrived meanwhile is raised now."""
        self.deferring = False
        self.checkpoint()


@dataclass
class LiveNetwork:
    topo: Topology
    mininet: Mininet
    state: StateDir
    seed: int
    sysctls: dict[str, dict[str, str]] = field(default_factory=dict)  # node -> sysctls set
    notes: list[str] = field(default_factory=list)  # what this kernel could not do, and why
    _procs: list[tuple[subprocess.Popen, str]] = field(default_factory=list)
    _teardown: list[Callable[[], object]] = field(default_factory=list)

    def node(self, name: str) -> Host:
        return self.mininet.nameToNode[name]

    def prefix(self, name: str) -> list[str]:
        """argv prefix that runs a command inside the node's namespaces."""
        return ["mnexec", "-a", str(self.node(name).pid)]

    def exec(self, name: str, argv: Sequence[str], timeout: float = 10.0) -> str:
        return run([*self.prefix(name), *argv], timeout=timeout)

    def register_process(self, popen: subprocess.Popen, what: str) -> None:
        self.state.add_proc(popen.pid, what)
        self._procs.append((popen, what))

    def on_teardown(self, fn: Callable[[], object]) -> None:
        self._teardown.append(fn)


@contextlib.contextmanager
def live_network(
    topo: Topology,
    seed: int = 0,
    tcp_rto_min_ms: float | None = None,
    tag: str | None = None,
    mtu: int = 1500,
) -> Iterator[LiveNetwork]:
    """Bring `topo` up (every interface at `mtu`); on every exit path (normal, exception,
    Ctrl-C, SIGTERM) tear it down."""
    if os.geteuid() != 0:
        raise PermissionError("a live network needs root (network namespaces, veths, tc)")
    with _Signals() as signals:
        state = StateDir.create(tag)
        try:
            net = LiveNetwork(topo, _Mininet(topo=None, controller=None, build=False), state, seed)
        except BaseException:
            state.remove()
            raise
        try:
            _bring_up(net, signals, tcp_rto_min_ms, mtu)
            signals.live()
            yield net
        finally:
            signals.deferring = True
            try:
                _tear_down(net)
            finally:
                # a signal that arrived during teardown still counts, also after a failure
                # (it is raised with the failure as its context); after a first signal, the
                # first one is what ended the run
                if not isinstance(sys.exc_info()[1], KeyboardInterrupt | GeneratorExit):
                    signals.checkpoint()


def _bring_up(net: LiveNetwork, signals: _Signals, tcp_rto_min_ms: float | None, mtu: int) -> None:
    topo = net.topo
    _start_nodes(net, signals)
    pids = {n.name: net.node(n.name).pid for n in topo.nodes}
    run_batch(netplan.veth_commands(topo, pids), "ip", timeout=STEP_TIMEOUT_S)
    signals.checkpoint()
    for node in topo.nodes:
        h = net.node(node.name)
        for port, peer in enumerate(topo.neighbors(node.name)):
            intf = _KnownIntf(topo.intf(node.name, peer), node=h, port=port,
                              moveIntfFn=_already_there)  # fmt: skip
            intf.ip, intf.prefixLen = topo.addr(node.name, peer)

    have_seed = HASH_SEED_SYSCTL.exists()
    have_rto = RTO_MIN_SYSCTL.exists()
    if not have_seed:
        net.notes.append("kernel lacks net.ipv4.fib_multipath_hash_seed: ECMP paths not seeded")
    if tcp_rto_min_ms and not have_rto:
        net.notes.append("kernel lacks net.ipv4.tcp_rto_min_us: rto_min set on host routes")
    netem = any(lk.delay_ms > 0 for lk in topo.links) and probe().netem
    plans = netplan.node_plans(topo, net.seed, tcp_rto_min_ms, have_seed, have_rto, netem, mtu)
    for name, plan in plans.items():
        net.sysctls[name] = dict(plan.sysctls)
    with ThreadPoolExecutor(CONFIG_WORKERS) as pool:
        futures = [
            pool.submit(_configure, net.node(n).pid, net.prefix(n), p) for n, p in plans.items()
        ]
        pending = set(futures)
        while pending:
            done, pending = wait(pending, timeout=0.1, return_when=FIRST_EXCEPTION)
            if signals.pending is not None or any(f.exception() for f in done):
                for f in pending:
                    f.cancel()
                wait(pending)
                signals.checkpoint()
                for f in done:
                    f.result()


class _KnownIntf(Intf):
    """An interface whose address comes from the topology, so Mininet (its CLI's `h1 ping h16`
    name substitution, `node.IP()`) never shells out to ifconfig to learn it."""

    def updateIP(self) -> str | None:  # noqa: N802 (Mininet's name)
        return self.ip


def _start_nodes(net: LiveNetwork, signals: _Signals) -> None:
    """One Mininet Host (a shell in fresh namespaces) per node, started by a few threads.

    Each node is recorded in the state dir as soon as its shell exists; an interrupt lets the
    shells already starting finish (and be recorded) before it is raised.
    """
    names = [n.name for n in net.topo.nodes]
    made: dict[str, Host] = {}
    errors: list[BaseException] = []
    with ThreadPoolExecutor(CONFIG_WORKERS) as pool:
        futures = {pool.submit(Host, name, inNamespace=True, ip=None): name for name in names}
        pending = set(futures)
        stopping = False
        while pending:
            done, pending = wait(pending, timeout=0.1)
            for f in done:
                if f.cancelled():
                    continue
                if f.exception() is not None:
                    errors.append(f.exception())
                    continue
                made[futures[f]] = f.result()
                net.state.add_node(futures[f], made[futures[f]].pid)
            if not stopping and (signals.pending is not None or errors):
                stopping = True
                for f in pending:
                    f.cancel()
                pending = {f for f in pending if not f.cancelled()}
    _register(net, names, made)
    signals.checkpoint()
    if errors:
        raise errors[0]


def _register(net: LiveNetwork, names: list[str], made: dict[str, Host]) -> None:
    """Hand the started hosts to the Mininet object (its CLI and `net.node()` use these)."""
    for name in names:
        if name in made:
            net.mininet.hosts.append(made[name])
            net.mininet.nameToNode[name] = made[name]


def _already_there(_intf: str, _node: Host) -> None:
    """Interfaces are born in their namespace (see netplan.veth_commands): nothing to move."""


def _configure(pid: int, prefix: list[str], plan: netplan.NodePlan) -> None:
    with in_netns(pid):
        write_sysctls(plan.sysctls)
    offloads_off(plan.intfs, netplan.OFFLOADS, prefix, timeout=STEP_TIMEOUT_S)
    run_batch(plan.ip, "ip", prefix=prefix, timeout=STEP_TIMEOUT_S)
    run_batch(plan.tc, "tc", prefix=prefix, timeout=STEP_TIMEOUT_S)


def _tear_down(net: LiveNetwork) -> None:
    errors: list[BaseException] = []
    for fn in reversed(net._teardown):
        try:
            fn()
        except Exception as e:  # keep tearing down; report after
            errors.append(e)
    for popen, _what in net._procs:
        if popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                popen.terminate()
    deadline = time.monotonic() + 3.0
    for popen, _what in net._procs:
        try:
            popen.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            popen.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                popen.wait(timeout=5.0)  # still alive: kill_namespaces reports it below
    leftovers = kill_namespaces(set(net.state.ours().netns))  # inodes are reused: check first
    for host in list(net.mininet.hosts):
        if host.shell is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                host.shell.wait(timeout=2.0)
            host.waitExited = False
            host.cleanup()
    net.mininet.hosts.clear()
    net.mininet.nameToNode.clear()
    net.state.remove()
    if leftovers:
        errors.append(RuntimeError(f"processes survived teardown: {leftovers}"))
    if errors and sys.exc_info()[0] is None:
        raise errors[0]
    for e in errors:
        print(f"teardown: {e}", file=sys.stderr)


def kill_namespaces(inodes: set[int], timeout: float = 5.0) -> list[int]:
    """SIGKILL every process in the given network namespaces; return any still alive after.

    Only namespaces proven ours (`StateDir.ours`) belong here. A pid is signalled through a
    pidfd opened before its namespace is read again, so a pid that died and was reused since
    the scan is never hit."""
    if not inodes:
        return []
    deadline = time.monotonic() + timeout
    while True:
        pids = pids_in_netns(inodes)  # a zombie has no namespace: dead counts as gone
        if not pids or time.monotonic() > deadline:
            return pids
        for pid in pids:  # again each round: a dying shell may just have forked
            _kill_if_in(pid, inodes)
        time.sleep(0.02)


def _kill_if_in(pid: int, inodes: set[int]) -> None:
    try:
        fd = os.pidfd_open(pid)
    except OSError:  # gone (or no pidfd on this kernel: the pid was just seen in the netns)
        if netns_inode(pid) in inodes:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        return
    try:
        if netns_inode(pid) in inodes:  # the pidfd pins this process: same pid, same process
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)
