#!/usr/bin/env python3
"""A GPU load for check_gpu.sh: matrix products with PyTorch on cuda:0 for SECONDS seconds.
  gpu_load.py SECONDS DUTY PIDFILE [--selftest]
DUTY 1.0 keeps the card busy; 0.5 computes for 100 ms and sleeps for 100 ms, in turn. The pid is
written to PIDFILE once the first product has run (the process is then on the card). It ends by
itself after SECONDS; --selftest only sleeps (no torch, for a machine without a GPU)."""
import os
import sys
import time

seconds, duty, pidfile = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
selftest = "--selftest" in sys.argv[4:]
end = time.monotonic() + seconds


def ready():
    with open(pidfile + ".tmp", "w") as f:
        f.write("%d\n" % os.getpid())
    os.rename(pidfile + ".tmp", pidfile)


if selftest:
    ready()
    while time.monotonic() < end:
        time.sleep(0.2)
    sys.exit(0)

import torch  # noqa: E402 (not needed for --selftest)

a = torch.randn(8192, 8192, device="cuda")
b = torch.randn(8192, 8192, device="cuda")
c = a @ b
torch.cuda.synchronize()
ready()
while time.monotonic() < end:
    t = time.monotonic()
    while time.monotonic() - t < 0.1:
        c = a @ b
        torch.cuda.synchronize()
    if duty < 1.0:
        time.sleep(0.1 * (1.0 - duty) / duty)
print("gpu_load %d: done, %.0f s at duty %.2f" % (os.getpid(), seconds, duty), flush=True)
