"""The parameter server of `--collective ps`: `python -m workloads.ps_server`.

It takes the worker's flags (the same `--spec`, `--master-addr`, `--master-port`, `--addr`,
`--out`, `--run-id`; `--world` is the number of WORKERS, N, and `--rank` is ignored: the
server is the transport's rank N). It joins the transport's group of N + 1 through the job's
rendezvous store (workloads/transport/ps.py), serves every round worker 0 announces, and exits
0 when the workers say they are done. It is not in DDP's group and holds no model.

It writes DIR/server/rounds.jsonl (the `rounds` rows of its side of each round: rank N, the
reduce stage's delivered loss; `iter` is the round's index and `bucket` 0, since the steps
and buckets are the workers'; `train_phase` is read off ε, critical at 0 and stable above,
since the phase controller is the workers') and DIR/server/meta.json. A run
folder's merge reads `rank*/` only, so these stay beside the workers' tables, not in them.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from workloads.args import parse_args
from workloads.provenance import versions
from workloads.rank import transport_config
from workloads.recorder import JsonlTable
from workloads.rendezvous import _route_source, ifname_of
from workloads.spec import MASTER_PORT
from workloads.transport.hooks.udp import stats_rows
from workloads.transport.ps import ParameterServer


def _meta(args: Any, ps: ParameterServer, addr: str, rounds: int) -> dict[str, Any]:
    return {
        "role": "server",
        "rank": ps.rank,
        "world": ps.world,
        "workers": ps.world - 1,
        "addr": addr,
        "transport": ps.policy_name,
        "collective": "ps",
        "rounds": rounds,
        "fastpath": ps.fastpath,
        "t_max_ms": ps.t_max_ms,
        "p50_ms": ps.p50_ms,
        "started": {"realtime_s": time.time(), "monotonic_s": time.monotonic()},
        "spec": args.spec.model_dump(),
        "versions": versions(),
    }


def serve(args: Any) -> int:
    spec, env = args.spec, os.environ
    if spec.collective != "ps":
        raise SystemExit("collective: the parameter server runs only with --collective ps")
    workers = args.world if args.world is not None else int(env.get("WORLD_SIZE", "0"))
    master = args.master_addr or env.get("MASTER_ADDR", "127.0.0.1")
    port = args.master_port or int(env.get("MASTER_PORT", MASTER_PORT))
    if workers < 2:
        raise SystemExit(f"world: ps needs at least 2 workers, got {workers}")
    addr = args.addr or _route_source(master, port)
    if "GLOO_SOCKET_IFNAME" not in env and (name := ifname_of(addr)) is not None:
        env["GLOO_SOCKET_IFNAME"] = name  # the transport's Gloo group binds where the UDP does
    config = transport_config(spec)
    out = Path(args.out) / "server"
    out.mkdir(parents=True, exist_ok=True)
    ps = ParameterServer.join_as_server(addr, spec.transport, config, master, port, workers)
    table = JsonlTable(out / "rounds.jsonl", "rounds", args.run_id)
    n = 0
    try:
        while (a := ps.next_round()) is not None:
            _, stats = ps.serve(a)
            phase = "stable" if a.epsilon > 0 and not a.reliable else "critical"
            common = {"rank": ps.rank, "iter": n, "bucket": 0, "transport": spec.transport,
                      "train_phase": phase, "is_warmup": a.reliable}  # fmt: skip
            for row in stats_rows(common, stats):
                table.write(row)
            table.flush()
            n += 1
    finally:
        table.close()
        meta = _meta(args, ps, addr, n)
        ps.close()
        (out / "meta.json").write_text(json.dumps(meta, indent=2, default=str) + "\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    return serve(parse_args(argv, description=__doc__.split("\n")[0]))


if __name__ == "__main__":
    sys.exit(main())
