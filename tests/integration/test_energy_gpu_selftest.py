"""The GPU energy check's own pipeline, without a GPU (tests/gpu/README.md): fjord-push bundled as it
travels to a GPU machine (tests/gpu/bundle.sh), energy_gpu.sh --selftest (the daemon every 2 s into a
capture server, the fake NVML's card of constant power with an energy counter, NVML read every
100 ms, the stand-in nvidia-smi), then energy_compare.py feeding the captured envelopes into a real
fjord: its job energy from the counter and from the power against the counter read beside, within
the check's own bounds. Keeps the scripts the lead carries to the GPU machine working."""
import os
import shutil
import subprocess
import tempfile

from harness import FJORD, SOURCE, check, finish

GPU = os.path.join(SOURCE, "tests", "gpu")


def main():
    build = os.path.dirname(os.path.abspath(FJORD))
    tmp = tempfile.mkdtemp(prefix="fjord-energy-gpu-")
    try:
        bundle, out = os.path.join(tmp, "bundle"), os.path.join(tmp, "out")
        r = subprocess.run(["bash", os.path.join(GPU, "bundle.sh"), bundle, build], capture_output=True, text=True,
                           timeout=120)
        check(r.returncode == 0, "bundle.sh: %s" % r.stderr[-500:])
        env = dict(os.environ, FJ_ENERGY_LOAD_S="8")
        r = subprocess.run([os.path.join(bundle, "energy_gpu.sh"), out, bundle, "--selftest"], capture_output=True,
                           text=True, timeout=180, env=env)
        check(r.returncode == 0, "energy_gpu.sh --selftest: %d %s" % (r.returncode, r.stdout[-1500:]))
        check("fjord-push sent the card's energy counter" in r.stdout, "the counter was sent: %s" % r.stdout[-800:])
        for name in ("daemon.jsonl", "nvml.jsonl", "power.csv", "load.pid", "meta.json"):
            check(os.path.getsize(os.path.join(out, name)) > 0, "%s written" % name)
        r = subprocess.run(["python3", os.path.join(GPU, "energy_compare.py"), out, "--fjord", FJORD],
                           capture_output=True, text=True, timeout=120)
        print(r.stdout)
        check(r.returncode == 0 and "energy check: PASS" in r.stdout,
              "energy_compare.py: %d %s %s" % (r.returncode, r.stdout[-1500:], r.stderr[-800:]))
        check("(counter) |" in r.stdout and "(power) |" in r.stdout, "fjord's figures from both: %s" % r.stdout)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    finish()


if __name__ == "__main__":
    main()
