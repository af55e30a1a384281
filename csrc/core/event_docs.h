/* The docstrings of gpuhost.Event and of the event functions (csrc/event.c): event(),
 * event_elapsed_time(), the profiler's start and stop, the type, its methods and properties,
 * as PyDoc_STRVAR definitions that event.c's method and property tables name.  numpydoc
 * sections (docs/ renders them through napoleon); the >>> examples run against the fake
 * driver (tests/fakecuda) as well as a GPU.  Included by event.c only.
 */
#ifndef GH_EVENT_DOCS_H
#define GH_EVENT_DOCS_H

#include <Python.h>

PyDoc_STRVAR(event_record_doc,
             "record($self, /, stream=0)\n--\n\n"
             "Record the event on a stream: it completes when the work queued before it has.\n\n"
             "Parameters\n"
             "----------\n"
             "stream : Stream, optional\n"
             "    A stream of the event's context; 0 or None: the default stream.\n\n"
             "Raises\n"
             "------\n"
             "CudaDriverError\n"
             "    If the stream belongs to another context.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> e = gpuhost.event()\n"
             ">>> e.record(s)\n"
             ">>> e.synchronize()\n"
             ">>> e.query()\n"
             "True");

PyDoc_STRVAR(event_wait_doc,
             "wait($self, /, stream=0)\n--\n\n"
             "Make later work on a stream wait until this event has completed.\n\n"
             "The host does not wait. The stream may be another device's: the wait then orders\n"
             "work across the two devices (for an event opened from another process's IPC handle,\n"
             "the host waits for it).\n\n"
             "Parameters\n"
             "----------\n"
             "stream : Stream, optional\n"
             "    The stream to hold back; 0 or None: the default stream.\n\n"
             "Examples\n"
             "--------\n"
             ">>> producer, consumer = gpuhost.stream(), gpuhost.stream()\n"
             ">>> d = gpuhost.to_device(np.arange(3), stream=producer)\n"
             ">>> ready = gpuhost.event(timing=False)\n"
             ">>> ready.record(producer)\n"
             ">>> ready.wait(consumer)  # consumer's later work sees d's data\n"
             ">>> h = d.copy_to_host(stream=consumer)");

PyDoc_STRVAR(event_query_doc,
             "query($self, /)\n--\n\n"
             "Whether the work before the last record() has finished, without waiting.\n\n"
             "True also for an event never recorded.\n\n"
             "Returns\n"
             "-------\n"
             "bool\n\n"
             "Examples\n"
             "--------\n"
             ">>> e = gpuhost.event()\n"
             ">>> e.query()  # never recorded\n"
             "True\n"
             ">>> s = gpuhost.stream()\n"
             ">>> e.record(s)\n"
             ">>> e.synchronize()\n"
             ">>> e.query()\n"
             "True");

PyDoc_STRVAR(
    event_synchronize_doc,
    "synchronize($self, /)\n--\n\n"
    "Wait until the event has completed: the work queued before its record() is done.\n\n"
    "The GIL is released while waiting. It returns at once for an event never recorded.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> h = gpuhost.to_device(np.arange(3), stream=s).copy_to_host(stream=s)\n"
    ">>> s.record().synchronize()  # h is complete now\n"
    ">>> h\n"
    "array([0, 1, 2])");

PyDoc_STRVAR(event_elapsed_time_doc,
             "elapsed_time($self, end, /)\n--\n\n"
             "The time from this event to `end`, in milliseconds.\n\n"
             "Parameters\n"
             "----------\n"
             "end : Event\n"
             "    A later event, recorded and complete (synchronize() it first).\n\n"
             "Returns\n"
             "-------\n"
             "float\n"
             "    Milliseconds, with a resolution of about half a microsecond.\n\n"
             "Raises\n"
             "------\n"
             "CudaDriverError\n"
             "    If either event was made with timing=False or was never recorded.\n"
             "CudaAPIError\n"
             "    CUDA_ERROR_NOT_READY if either has not completed.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> start, end = gpuhost.event(), gpuhost.event()\n"
             ">>> start.record(s)\n"
             ">>> d = gpuhost.to_device(np.zeros(1 << 20), stream=s)\n"
             ">>> end.record(s)\n"
             ">>> end.synchronize()\n"
             ">>> ms = start.elapsed_time(end)\n"
             ">>> ms >= 0\n"
             "True");

PyDoc_STRVAR(
    event_ipc_handle_doc,
    "ipc_handle($self, /)\n--\n\n"
    "Export the event to another process.\n\n"
    "Returns\n"
    "-------\n"
    "IpcEventHandle\n"
    "    A picklable handle; the other process calls its open() and waits on the event.\n\n"
    "Raises\n"
    "------\n"
    "ValueError\n"
    "    Unless the event was made with event(interprocess=True, timing=False).\n\n"
    "Examples\n"
    "--------\n"
    ">>> e = gpuhost.event(timing=False, interprocess=True)\n"
    ">>> queue.put(e.ipc_handle())  # doctest: +SKIP");

PyDoc_STRVAR(event__repr_html__doc,
             "_repr_html_($self, /)\n--\n\n"
             "An HTML table of the event's device and flags, for Jupyter (no driver call).\n\n"
             "Returns\n"
             "-------\n"
             "str\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.event()._repr_html_()\n"
             "'<table class=\"gpuhost\"><caption style=\"text-align:left\">CUDA "
             "event</caption>...</table>'");

PyDoc_STRVAR(event__repr_pretty__doc,
             "_repr_pretty_($self, p, cycle, /)\n--\n\n"
             "IPython's pretty printer: the repr, then the event's device and flags one per line.");

PyDoc_STRVAR(event_handle_doc, "The CUevent as an int.\n\n"
                               "Examples\n"
                               "--------\n"
                               ">>> gpuhost.event().handle != 0\n"
                               "True");

PyDoc_STRVAR(event_timing_doc, "Whether the event records time, for elapsed_time().\n\n"
                               "Examples\n"
                               "--------\n"
                               ">>> gpuhost.event().timing\n"
                               "True\n"
                               ">>> gpuhost.event(timing=False).timing\n"
                               "False");

PyDoc_STRVAR(event_recorded_doc, "Whether record() was ever called.\n\n"
                                 "Examples\n"
                                 "--------\n"
                                 ">>> e = gpuhost.event()\n"
                                 ">>> e.recorded\n"
                                 "False\n"
                                 ">>> e.record()\n"
                                 ">>> e.recorded\n"
                                 "True");

PyDoc_STRVAR(event_device_doc, "The Device the event belongs to.\n\n"
                               "Examples\n"
                               "--------\n"
                               ">>> with gpuhost.gpus[1]:\n"
                               "...     e = gpuhost.event()\n"
                               ">>> e.device is gpuhost.gpus[1]\n"
                               "True");

PyDoc_STRVAR(event_doc,
             "A CUDA event: a marker recorded on a stream, to wait on or to time.\n\n"
             "Make one with gpuhost.event() or Stream.record(); it is not made directly.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> start = s.record()\n"
             ">>> d = gpuhost.to_device(np.zeros(1 << 20), stream=s)\n"
             ">>> end = s.record()\n"
             ">>> end.synchronize()\n"
             ">>> ms = start.elapsed_time(end)");

PyDoc_STRVAR(event_module_release_cached_events_doc,
             "release_cached_events()\n--\n\n"
             "Destroy the CUevent handles gpuhost keeps from dropped events for reuse (up to 64).");

PyDoc_STRVAR(event_module_event_doc,
             "event(timing=True, *, blocking_sync=False, interprocess=False)\n--\n\n"
             "Create an event in the current context.\n\n"
             "Parameters\n"
             "----------\n"
             "timing : bool, optional\n"
             "    Whether the event records time, for elapsed_time(). An event without timing\n"
             "    is cheaper to record and wait on.\n"
             "blocking_sync : bool, optional\n"
             "    If True, synchronize() sleeps instead of spinning.\n"
             "interprocess : bool, optional\n"
             "    If True, the event can be shared with another process (ipc_handle()); it needs\n"
             "    timing=False.\n\n"
             "Returns\n"
             "-------\n"
             "Event\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    For interprocess=True with timing=True.\n\n"
             "Examples\n"
             "--------\n"
             ">>> start, end = gpuhost.event(), gpuhost.event()\n"
             ">>> start.record()\n"
             ">>> d = gpuhost.to_device(np.zeros(1 << 20))\n"
             ">>> end.record()\n"
             ">>> end.synchronize()\n"
             ">>> ms = gpuhost.event_elapsed_time(start, end)");

PyDoc_STRVAR(
    event_module_event_elapsed_time_doc,
    "event_elapsed_time(evtstart, evtend, /)\n--\n\n"
    "Milliseconds between two recorded, completed timing events.\n\n"
    "The same as evtstart.elapsed_time(evtend), numba's name.\n\n"
    "Parameters\n"
    "----------\n"
    "evtstart, evtend : Event\n"
    "    The earlier and the later event, both made with timing=True, recorded and\n"
    "    complete.\n\n"
    "Returns\n"
    "-------\n"
    "float\n\n"
    "Raises\n"
    "------\n"
    "TypeError\n"
    "    If either is not an Event.\n"
    "CudaDriverError\n"
    "    If either event was made with timing=False or was never recorded.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> start = s.record()\n"
    ">>> d = gpuhost.to_device(np.zeros(1 << 20), stream=s)\n"
    ">>> end = s.record()\n"
    ">>> end.synchronize()\n"
    ">>> gpuhost.event_elapsed_time(start, end) >= 0\n"
    "True\n"
    ">>> gpuhost.event_elapsed_time(start, gpuhost.event(timing=False))\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "gpuhost.errors.CudaDriverError: the end event was made with timing=False and cannot be "
    "timed: make it with event(timing=True)");

PyDoc_STRVAR(
    event_module_open_ipc_event_doc,
    "open_ipc_event(handle, /)\n--\n\n"
    "Open an event another process exported (its 64 handle bytes) in the current context.");

PyDoc_STRVAR(event_module_profile_start_doc,
             "profile_start()\n--\n\n"
             "Start the profiler's collection (cuProfilerStart).\n\n"
             "With Nsight Systems' --capture-range=cudaProfilerApi, only the work between\n"
             "profile_start() and profile_stop() is profiled; gpuhost.profiling() is the context\n"
             "manager around the two.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.profile_start()\n"
             ">>> d = gpuhost.to_device(np.arange(3))\n"
             ">>> gpuhost.profile_stop()");

PyDoc_STRVAR(event_module_profile_stop_doc,
             "profile_stop()\n--\n\n"
             "Stop the profiler's collection (cuProfilerStop).\n\n"
             "The end of the range profile_start() began; gpuhost.profiling() is the context\n"
             "manager around the two.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.profile_start()\n"
             ">>> d = gpuhost.to_device(np.arange(3))\n"
             ">>> gpuhost.profile_stop()");

#endif /* GH_EVENT_DOCS_H */
