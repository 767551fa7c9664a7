"""Which host figure of a call would show a delay of tens of microseconds between two processes: process
CPU time, the calling thread's CPU time, or the user-space instructions the calling thread retires (Linux
perf_event_open). Processes of one small call alternate, without and with a 30 us busy wait (as
benchmarks/harness/perturb.py's host-delay-30us), and each prints its medians; the table gives, per figure,
the spread of identical processes (max / min) and the delayed processes' median over the plain ones', for
each process's median of its calls and its 5th percentile.

    .venv/bin/python scripts/host_figures.py --processes 5            # GPU where there is one, else CPU
    .venv/bin/python scripts/host_figures.py --workload python --pin 3  # pure Python, every process on CPU 3
"""

from __future__ import annotations

import argparse
import ctypes
import json
import os
import statistics
import struct
import subprocess
import sys
import time

CALLS = 400
DELAY_S = 30e-6
# x86_64 Linux: perf_event_open, PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, the ioctls
SYSCALL_PERF_EVENT_OPEN = 298
PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS = 0, 1
IOC_ENABLE, IOC_DISABLE, IOC_RESET = 0x2400, 0x2401, 0x2403
DISABLED, EXCLUDE_KERNEL, EXCLUDE_HV = 1 << 0, 1 << 5, 1 << 6


class Instructions:
    """User-space instructions retired by the calling thread; `available` is False where the kernel or
    the virtual machine does not count them."""

    def __init__(self) -> None:
        self.libc = ctypes.CDLL(None, use_errno=True)
        attr = struct.pack(
            "IIQQQQQ", PERF_TYPE_HARDWARE, 128, PERF_COUNT_HW_INSTRUCTIONS, 0, 0, 0,
            DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
        ).ljust(128, b"\0")  # fmt: skip
        self.buffer = ctypes.create_string_buffer(attr, 128)
        self.fd = self.libc.syscall(SYSCALL_PERF_EVENT_OPEN, self.buffer, 0, -1, -1, 0)
        self.available = self.fd >= 0
        self.error = "" if self.available else os.strerror(ctypes.get_errno())

    def count(self, call) -> int:
        self.libc.ioctl(self.fd, IOC_RESET, 0)
        self.libc.ioctl(self.fd, IOC_ENABLE, 0)
        call()
        self.libc.ioctl(self.fd, IOC_DISABLE, 0)
        return struct.unpack("q", os.read(self.fd, 8))[0]


def busy_wait(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def python_workload(delay: bool):
    """Pure Python of a few hundred microseconds a call, no torch: how far the machine alone spreads."""

    def call() -> None:
        if delay:
            busy_wait(DELAY_S)
        sum(i * i for i in range(3000))

    return call, "cpu"


def workload(delay: bool):
    """A small forward and backward a call (launch-bound on a GPU), with the busy wait first when `delay`."""
    import torch

    device = "cuda" if torch.cuda.is_available() else "cpu"
    x = torch.randn(64, 256, device=device)
    w = torch.randn(256, 256, device=device, requires_grad=True)

    def call() -> None:
        if delay:
            busy_wait(DELAY_S)
        y = torch.nn.functional.gelu(x @ w) * 0.5 + x
        y.sum().backward()  # on a GPU the backward runs on autograd's device thread

    return call, device


def one_process(delay: bool, kind: str, cpu: int | None) -> dict:
    if cpu is not None:
        os.sched_setaffinity(0, {cpu})
    call, device = (python_workload if kind == "python" else workload)(delay)
    for _ in range(50):
        call()
    counter = Instructions()
    figures: dict[str, list[float]] = {"process_cpu_us": [], "thread_cpu_us": [], "instructions": []}
    for _ in range(CALLS):
        t0, c0 = time.process_time(), time.thread_time()
        call()
        figures["process_cpu_us"].append((time.process_time() - t0) * 1e6)
        figures["thread_cpu_us"].append((time.thread_time() - c0) * 1e6)
        if counter.available:
            figures["instructions"].append(counter.count(call))
    # each figure's median and its 5th percentile: interference only adds time, so a low quantile of
    # many calls may move less between processes than their median
    summary = {}
    for name, values in figures.items():
        if values:
            summary[name] = statistics.median(values)
            summary[f"{name} p5"] = statistics.quantiles(values, n=20)[0]
    return {"device": device, "delay": delay, "instructions_error": counter.error, **summary}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--processes", type=int, default=5, help="of each kind, alternating")
    parser.add_argument(
        "--workload",
        choices=["torch", "python"],
        default="torch",
        help="a small forward and backward (default), or pure Python",
    )
    parser.add_argument("--pin", type=int, metavar="CPU", help="every process on this one CPU")
    parser.add_argument("--child", choices=["plain", "delay"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child == "delay", args.workload, args.pin)))
        return
    options = ["--workload", args.workload, *(["--pin", str(args.pin)] if args.pin is not None else [])]
    runs = []
    for _ in range(args.processes):
        for kind in ("plain", "delay"):
            done = subprocess.run(
                [sys.executable, __file__, "--child", kind, *options],
                capture_output=True,
                text=True,
                check=True,
            )
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    plain = [r for r in runs if not r["delay"]]
    delayed = [r for r in runs if r["delay"]]
    print(
        f"{args.workload} on {runs[0]['device']}, {len(plain)} + {len(delayed)} processes of {CALLS} calls, "
        f"delay {DELAY_S * 1e6:.0f} us, {f'pinned to CPU {args.pin}' if args.pin is not None else 'not pinned'}"
    )
    if runs[0]["instructions_error"]:
        print(f"instructions: not counted here ({runs[0]['instructions_error']})")
    print(
        f"{'figure':20} {'plain median':>13} {'A/A max/min':>12} {'delayed/plain':>14} {'delay / A/A spread':>19}"
    )
    for name in [n for n in plain[0] if n not in ("device", "delay", "instructions_error")]:
        same = [r[name] for r in plain]
        spread = max(same) / min(same)
        ratio = statistics.median(r[name] for r in delayed) / statistics.median(same)
        print(
            f"{name:20} {statistics.median(same):13.1f} {spread:12.3f} {ratio:14.3f} {(ratio - 1) / (spread - 1 or 1e-9):19.1f}"
        )


if __name__ == "__main__":
    main()
