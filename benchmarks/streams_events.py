"""Streams and events: gpuhost next to raw C, cuda.core, CuPy and numba-cuda, one run.

Rows (ANCHORS.md): event record, stream synchronize on an idle stream, stream create
(+destroy), event create (+destroy).  Run on the GPU machine:
    python3 benchmarks/streams_events.py [--json out.json]
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(1, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the checkout
from _harness import Call, Native, interleaved, raw_c, table  # noqa: E402

import gpuhost  # noqa: E402


def peers():
    """{name: module-ish} of the peers importable here."""
    found = {}
    try:
        import cupy

        found["CuPy"] = cupy
    except ImportError:
        pass
    try:
        from numba import cuda as ncuda

        ncuda.current_context()
        found["numba-cuda"] = ncuda
    except Exception:  # numba-cuda missing or unable to start
        pass
    try:
        from cuda.core import experimental as ccx  # older cuda.core
    except ImportError:
        ccx = None
    try:
        from cuda import core as cc

        if not hasattr(cc, "Device"):
            cc = ccx
    except ImportError:
        cc = ccx
    if cc is not None:
        dev = cc.Device()
        dev.set_current()
        found["cuda.core"] = dev
    return found


def timed_event_options(stream):
    """cuda.core EventOptions for an event with timing, like the others' default events:
    cuda.core's default has none, and recording an event without a timestamp is another,
    cheaper operation.  None (said why) where this cuda.core cannot make one."""
    module = sys.modules[type(stream).__module__.rsplit("._", 1)[0]]
    errors = []
    for name in ("timing_enabled", "enable_timing"):  # the field's newer and older names
        try:
            return module.EventOptions(**{name: True})
        except Exception as e:
            errors.append("%s: %s" % (type(e).__name__, e))
    print("cuda.core: no event with timing (%s); its event record row times an event without"
          % "; ".join(errors))
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()

    raw = raw_c()
    ours_stream, ours_event = gpuhost.stream(), gpuhost.event()
    p = peers()
    rows = []

    # event record: batches of 200, synchronized outside the timed window
    cases = {"raw C": Native(raw.bench_event_record), "gpuhost": Call(ours_event.record, ours_stream)}
    syncs = {}
    syncs["gpuhost"] = ours_stream.synchronize
    if "CuPy" in p:
        cs, ce = p["CuPy"].cuda.Stream(), p["CuPy"].cuda.Event()
        cases["CuPy"], syncs["CuPy"] = Call(ce.record, cs), cs.synchronize
    if "numba-cuda" in p:
        ns, ne = p["numba-cuda"].stream(), p["numba-cuda"].event()
        cases["numba-cuda"], syncs["numba-cuda"] = Call(ne.record, ns), ns.synchronize
    if "cuda.core" in p:
        ks = p["cuda.core"].create_stream()
        ke = ks.record(options=timed_event_options(ks))
        cases["cuda.core"], syncs["cuda.core"] = Call(ks.record, ke), ks.sync
    fig = interleaved(cases, 200, syncs)
    rows.append(("event record", fig, "<= raw C + 0.15 µs", lambda o, r: o <= r + 0.15))

    # stream synchronize, idle stream
    cases = {"raw C": Native(raw.bench_stream_sync), "gpuhost": ours_stream.synchronize}
    if "CuPy" in p:
        cases["CuPy"] = cs.synchronize
    if "numba-cuda" in p:
        cases["numba-cuda"] = ns.synchronize
    if "cuda.core" in p:
        cases["cuda.core"] = ks.sync
    fig = interleaved(cases, 2000)
    rows.append(("stream synchronize (idle)", fig, "<= raw C + 0.15 µs", lambda o, r: o <= r + 0.15))

    # stream create + destroy
    cases = {"raw C": Native(raw.bench_stream_create), "gpuhost": gpuhost.stream}
    if "CuPy" in p:
        cases["CuPy"] = p["CuPy"].cuda.Stream
    if "numba-cuda" in p:
        cases["numba-cuda"] = p["numba-cuda"].stream
    if "cuda.core" in p:
        cases["cuda.core"] = lambda: p["cuda.core"].create_stream().close()
    fig = interleaved(cases, 500)
    rows.append(("stream create + destroy", fig, "<= 1.2 x raw C", lambda o, r: o <= 1.2 * r))

    # event create + destroy
    cases = {"raw C": Native(raw.bench_event_create), "gpuhost": gpuhost.event}
    if "CuPy" in p:
        cases["CuPy"] = p["CuPy"].cuda.Event
    if "numba-cuda" in p:
        cases["numba-cuda"] = p["numba-cuda"].event
    fig = interleaved(cases, 2000)
    rows.append(("event create + destroy", fig, "<= 0.6 µs", lambda o, r: o <= 0.6))

    table(rows, args.json)


if __name__ == "__main__":
    main()
