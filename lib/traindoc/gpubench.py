"""A per-node GPU benchmark for the throughput runbook's "benchmark all nodes" action.

Run on every node (``srun --ntasks-per-node=1 python -m traindoc.gpubench``): it times the
same bf16 matmul on each visible GPU and prints ``host,seconds`` lines (the slowest GPU of the
node, or one line per GPU with ``--per-gpu``), the CSV the throughput runbook reads as a
benchmark table. Needs torch; with no GPU it times the CPU (``--device cpu``, for a dry run).
"""

from __future__ import annotations

import argparse
import socket
import sys
import time
from collections.abc import Sequence


def bench(device: str, size: int = 8192, repeats: int = 20) -> float:
    """Seconds for ``repeats`` matmuls of two ``size``×``size`` matrices on ``device`` (after
    one warm-up)."""
    import torch  # the nodes that train have it; the library itself does not need it

    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)

    def sync() -> None:
        if device.startswith("cuda"):
            torch.cuda.synchronize(device)

    a @ b
    sync()
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    sync()
    return time.perf_counter() - t0


def main(argv: Sequence[str] | None = None) -> int:
    """Print ``host,seconds`` for this node; exit 1 when torch is missing."""
    ap = argparse.ArgumentParser(prog="python -m traindoc.gpubench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--size", type=int, default=8192, help="matrix side (default 8192)")
    ap.add_argument("--repeats", type=int, default=20, help="timed matmuls (default 20)")
    ap.add_argument("--device", default=None, help="cuda:N or cpu (default: every visible GPU)")
    ap.add_argument("--per-gpu", action="store_true", help="one line per GPU (host:gpuN,seconds)")
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("traindoc.gpubench needs torch on the node", file=sys.stderr)
        return 1
    host = socket.gethostname()
    if args.device:
        devices = [args.device]
    elif torch.cuda.is_available():
        devices = [f"cuda:{i}" for i in range(torch.cuda.device_count())]
    else:
        devices = ["cpu"]
    times = {d: bench(d, args.size, args.repeats) for d in devices}
    if args.per_gpu:
        for d, t in times.items():
            print(f"{host}:{d.replace('cuda:', 'gpu')},{t:.4f}")
    else:
        print(f"{host},{max(times.values()):.4f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
