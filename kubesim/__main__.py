"""python -m kubesim --scenario NAME --nodes N --seed S --kubeconfig FILE [--objects DIR] [--kueue] ..."""

from __future__ import annotations

import argparse
import importlib.util
import logging
import signal
import threading

from kubesim.sim import DEFAULT_BOOKMARK_INTERVAL, DEFAULT_CONTINUE_TTL, EMPTY, start
from kubesim.store import DEFAULT_HISTORY_WINDOW


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m kubesim", description="Serve a simulated Kubernetes API."
    )
    parser.add_argument("--scenario", default=EMPTY)
    parser.add_argument("--nodes", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=6443)
    parser.add_argument("--kubeconfig", required=True, help="where to write the kubeconfig")
    parser.add_argument("--objects", help="a folder (or file) of YAML/JSON objects to load")
    parser.add_argument(
        "--replace", action="store_true", help="load only --objects, not the scenario's objects"
    )
    parser.add_argument(
        "--kueue",
        action="store_true",
        help="install Kueue v0.19.2's CRDs at startup (the kueue controller plays Kueue's part)",
    )
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--no-controllers", action="store_true")
    group.add_argument("--controllers", help="comma-separated controller names (default: all)")
    parser.add_argument("--token", help="the bearer token to accept (default: random)")
    parser.add_argument("--history-window", type=int, default=DEFAULT_HISTORY_WINDOW)
    parser.add_argument("--bookmark-interval", type=float, default=DEFAULT_BOOKMARK_INTERVAL)
    parser.add_argument("--continue-ttl", type=float, default=DEFAULT_CONTINUE_TTL)
    parser.add_argument(
        "--plain-http",
        action="store_true",
        help="serve plain HTTP instead of HTTPS (kubectl sends no bearer token without TLS)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="%(asctime)s %(message)s"
    )
    controllers: bool | list[str] = False
    if args.controllers:
        controllers = args.controllers.split(",")
    elif not args.no_controllers:
        # All controllers by default, when the controllers package is there to run them.
        controllers = importlib.util.find_spec("kubesim.controllers") is not None
    try:
        sim = start(
            scenario=args.scenario,
            nodes=args.nodes,
            seed=args.seed,
            objects_dir=args.objects,
            replace=args.replace,
            controllers=controllers,
            port=args.port,
            host=args.host,
            kubeconfig_path=args.kubeconfig,
            history_window=args.history_window,
            bookmark_interval=args.bookmark_interval,
            continue_ttl=args.continue_ttl,
            token=args.token,
            tls=not args.plain_http,
            kueue=args.kueue,
        )
    except ValueError as exc:
        parser.error(str(exc))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    print(f"kubesim serving {sim.url}; kubeconfig {sim.kubeconfig_path}", flush=True)
    stop.wait()
    sim.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
