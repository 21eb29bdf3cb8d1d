"""Paced UDP cross-traffic for incast bursts: one process per sender host, driven over stdin.

Started in its host before the run (so an event costs a line on a pipe, not a process start):

    start DST_IP MBPS   -> "ok"        begin (or re-rate) a paced flow to DST_IP
    stop DST_IP         -> "ok N"      end it; N datagrams were sent
    quit / EOF          -> exit

Datagrams are 1500-byte IP packets to the discard port; pacing is by absolute deadlines, so a
late wake-up sends the packets that were due (a short train) and keeps the average rate. Each
sender sprays its packets over `PORTS` sockets (source ports) in turn, as a sender of several
flows would: ECMP hashes each port apart, so the burst spreads over the fabric's paths and
converges at the target's downlink. With one port per sender, all of a run's senders hash onto
one aggregation router about one run in eight (k=4), and the burst is dropped one hop early.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import sys
import time

PAYLOAD = bytes(1472)  # + 8 UDP + 20 IP = 1500 bytes on the wire
PORT = 9
TICK_S = 0.0005
MAX_TRAIN = 16
PORTS = 8


def main() -> int:
    socks = [socket.socket(socket.AF_INET, socket.SOCK_DGRAM) for _ in range(PORTS)]
    flows: dict[str, list[float]] = {}  # dst -> [interval_s, next_due, sent]
    out = sys.stdout
    out.write("ready\n")
    out.flush()
    buf = b""
    while True:
        ready, _, _ = select.select([0], [], [], TICK_S if flows else None)
        if ready:
            chunk = os.read(0, 4096)
            if not chunk:
                return 0
            buf += chunk
            *lines, buf = buf.split(b"\n")
            for line in lines:
                words = line.decode().split()
                if not words:
                    continue
                if words[0] == "quit":
                    return 0
                if words[0] == "start":
                    dst, mbps = words[1], float(words[2])
                    interval = len(PAYLOAD + bytes(28)) * 8 / (mbps * 1e6)
                    sent = flows[dst][2] if dst in flows else 0
                    flows[dst] = [interval, time.monotonic(), sent]
                    out.write("ok\n")
                elif words[0] == "stop":
                    flow = flows.pop(words[1], None)
                    out.write(f"ok {int(flow[2]) if flow else 0}\n")
                else:
                    out.write(f"error unknown command {words[0]!r}\n")
                out.flush()
        now = time.monotonic()
        for dst, flow in flows.items():
            n = 0
            while flow[1] <= now and n < MAX_TRAIN:
                with contextlib.suppress(OSError):  # a full local queue drops silently anyway
                    socks[int(flow[2]) % PORTS].sendto(PAYLOAD, (dst, PORT))
                flow[1] += flow[0]
                flow[2] += 1
                n += 1
            if flow[1] < now - 0.01:
                flow[1] = now  # fell >10 ms behind (descheduled): do not catch up in one blast


if __name__ == "__main__":
    sys.exit(main())
