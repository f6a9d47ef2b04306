"""Run the simulator on its own: `python -m cronpilot.harness.simulator --port 8099`."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal

from cronpilot.harness.simulator.server import Simulator


def _arguments() -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m cronpilot.harness.simulator", description=__doc__
    )
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--cycle", type=float, default=60.0, help="seconds per flash sale / billing period"
    )
    parser.add_argument("--slow", type=float, default=1.5, help="delay of /reports/slow")
    return parser.parse_args()


async def _serve(arguments: argparse.Namespace) -> None:
    simulator = Simulator(
        seed=arguments.seed,
        cycle_seconds=arguments.cycle,
        port=arguments.port,
        slow_seconds=arguments.slow,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    base_url = await simulator.start()
    print(f"simulator serving on {base_url} (Ctrl-C to stop)", flush=True)
    try:
        await stop.wait()
    finally:
        await simulator.stop()


def main() -> None:
    logging.basicConfig(level=logging.INFO)
    asyncio.run(_serve(_arguments()))


if __name__ == "__main__":
    main()
