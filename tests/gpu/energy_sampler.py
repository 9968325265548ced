#!/usr/bin/env python3
"""NVML's own figures of GPU 0 for energy_gpu.sh: the card's total energy counter (millijoules since
the driver loaded) and its power, read every 100 ms through NVML itself (ctypes: no pynvml needed,
and the same code reads the bundle's fake NVML in --selftest), one JSON line per reading into
OUTFILE, until STOPFILE exists or SECONDS pass.
  energy_sampler.py LIBNVML OUTFILE STOPFILE SECONDS
A line: {"t": wall-clock seconds, "mj": counter or null, "mw": power or null}. The first line and
the last are the readings "before" and "after" the run. NOT_SUPPORTED (a card without a counter)
gives "mj": null, as fjord-push then sends none."""
import ctypes
import json
import os
import sys
import time

lib_path, outfile, stopfile, seconds = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
nvml = ctypes.CDLL(lib_path)
rc = nvml.nvmlInit_v2()
if rc != 0:
    sys.exit("energy_sampler: nvmlInit_v2 failed with NVML code %d" % rc)
dev = ctypes.c_void_p()
rc = nvml.nvmlDeviceGetHandleByIndex_v2(ctypes.c_uint(0), ctypes.byref(dev))
if rc != 0:
    sys.exit("energy_sampler: no GPU 0 (NVML code %d)" % rc)
energy_fn = getattr(nvml, "nvmlDeviceGetTotalEnergyConsumption", None)


def reading():
    mj, mw = ctypes.c_ulonglong(0), ctypes.c_uint(0)
    t = time.time()
    has_mj = energy_fn is not None and energy_fn(dev, ctypes.byref(mj)) == 0
    has_mw = nvml.nvmlDeviceGetPowerUsage(dev, ctypes.byref(mw)) == 0
    return {"t": t, "mj": mj.value if has_mj else None, "mw": mw.value if has_mw else None}


end = time.monotonic() + seconds
with open(outfile, "w") as f:
    while True:
        f.write(json.dumps(reading()) + "\n")
        f.flush()
        if os.path.exists(stopfile) or time.monotonic() >= end:
            break
        time.sleep(0.1)
nvml.nvmlShutdown()
