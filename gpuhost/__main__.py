"""``python -m gpuhost``: the devices found, as numba.cuda.detect() prints them, and on a
machine with a GPU a short self-check of the driver (context, memory information)."""
import argparse
import sys

import gpuhost


def self_check(out):
    """Exercise the driver on every device; return the number of failures."""
    failures = 0
    for dev in gpuhost.list_devices():
        try:
            with dev:
                ctx = gpuhost.current_context()
                info = ctx.get_memory_info()
                ctx.synchronize()
            assert 0 < info.free <= info.total == dev.total_memory, info
            print("self-check device %d: context %#x, %.1f of %.1f GiB free: ok"
                  % (dev.id, ctx.handle, info.free / 2**30, info.total / 2**30), file=out)
        except Exception as e:  # report every failure, then go on to the next device
            failures += 1
            print("self-check device %d: FAILED: %s: %s" % (dev.id, type(e).__name__, e), file=out)
    return failures


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m gpuhost", description=__doc__)
    parser.parse_args(argv)
    out = sys.stdout
    print("gpuhost %s" % gpuhost.__version__, file=out)
    try:
        print("NVRTC %d.%d: %s" % (gpuhost.runtime.get_version() + (gpuhost._core.nvrtc_library(),)),
              file=out)
    except gpuhost.NvrtcSupportError as e:
        print("NVRTC not found: %s" % e, file=out)
    if not gpuhost.detect(file=out):
        return 0  # no GPU here: nothing more to check, and that is not an error
    print("Driver: CUDA %d.%d, %s" % (gpuhost.driver_version() + (gpuhost._core.driver_library(),)),
          file=out)
    return 1 if self_check(out) else 0


if __name__ == "__main__":
    sys.exit(main())
