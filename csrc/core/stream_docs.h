/* The docstrings of gpuhost.Stream and of the stream functions (csrc/stream.c): stream(),
 * default_stream() and the other module functions, the type, its methods and properties, as
 * PyDoc_STRVAR definitions that stream.c's method and property tables name.  numpydoc
 * sections (docs/ renders them through napoleon); the >>> examples run against the fake
 * driver (tests/fakecuda) as well as a GPU.  Included by stream.c only.
 */
#ifndef GH_STREAM_DOCS_H
#define GH_STREAM_DOCS_H

#include <Python.h>

PyDoc_STRVAR(stream_module_stream_doc,
             "stream(*, non_blocking=False, priority=0)\n--\n\n"
             "Create a new stream in the current context.\n\n"
             "Work queued on one stream runs in order; work on different streams may overlap.\n\n"
             "Parameters\n"
             "----------\n"
             "non_blocking : bool, optional\n"
             "    If True, the stream does not synchronize with the legacy default stream.\n"
             "priority : int, optional\n"
             "    Lower numbers run first: 0 is the lowest priority, the device's greatest is\n"
             "    negative (-5 on recent GPUs).\n\n"
             "Returns\n"
             "-------\n"
             "Stream\n\n"
             "Raises\n"
             "------\n"
             "ValueError\n"
             "    If `priority` is outside the device's range.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> d = gpuhost.to_device(np.arange(4), stream=s)\n"
             ">>> s.synchronize()\n"
             ">>> gpuhost.stream(priority=-1).priority\n"
             "-1");

PyDoc_STRVAR(stream_module_default_stream_doc,
             "default_stream()\n--\n\n"
             "The current context's default stream (handle 0).\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.default_stream().handle\n"
             "0");

PyDoc_STRVAR(
    stream_module_legacy_default_stream_doc,
    "legacy_default_stream()\n--\n\n"
    "The legacy default stream (CU_STREAM_LEGACY, handle 1) of the current context.\n\n"
    "It synchronizes with every blocking stream of its context: work on it waits for their\n"
    "earlier work, and theirs for its.\n\n"
    "Returns\n"
    "-------\n"
    "Stream\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.legacy_default_stream()\n"
    ">>> s\n"
    "<Legacy default CUDA stream on device 0>\n"
    ">>> s.handle\n"
    "1");

PyDoc_STRVAR(
    stream_module_per_thread_default_stream_doc,
    "per_thread_default_stream()\n--\n\n"
    "The per-thread default stream (CU_STREAM_PER_THREAD, handle 2) of the current context.\n\n"
    "There is one for each host thread, and it does not synchronize with other streams.\n\n"
    "Returns\n"
    "-------\n"
    "Stream\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.per_thread_default_stream()\n"
    ">>> s\n"
    "<Per-thread default CUDA stream on device 0>\n"
    ">>> s.handle\n"
    "2");

PyDoc_STRVAR(stream_module_external_stream_doc,
             "external_stream(ptr, /)\n--\n\n"
             "Wrap a stream made elsewhere, in the current context.\n\n"
             "gpuhost never destroys the stream: keep its owner alive while it is used.\n\n"
             "Parameters\n"
             "----------\n"
             "ptr : int\n"
             "    The CUstream's address, such as another library's `stream.ptr` or\n"
             "    `torch.cuda.Stream().cuda_stream`.\n\n"
             "Returns\n"
             "-------\n"
             "Stream\n"
             "    A stream whose `external` is True.\n\n"
             "Examples\n"
             "--------\n"
             ">>> import cupy  # doctest: +SKIP\n"
             ">>> s = gpuhost.external_stream(cupy.cuda.Stream().ptr)  # doctest: +SKIP");

PyDoc_STRVAR(stream_synchronize_doc,
             "synchronize($self, /)\n--\n\n"
             "Wait until all work queued on the stream has finished.\n\n"
             "The GIL is released while waiting, so other Python threads run.\n\n"
             "Raises\n"
             "------\n"
             "CudaAPIError\n"
             "    If queued work failed (such as a kernel's illegal address).\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> h = gpuhost.to_device(np.arange(4), stream=s).copy_to_host(stream=s)\n"
             ">>> s.synchronize()  # h holds the data now\n"
             ">>> h\n"
             "array([0, 1, 2, 3])");

PyDoc_STRVAR(stream_query_doc,
             "query($self, /)\n--\n\n"
             "Whether all work queued on the stream has finished, without waiting.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.stream().query()\n"
             "True");

PyDoc_STRVAR(stream_add_callback_doc,
             "add_callback($self, /, callback, arg=None)\n--\n\n"
             "Call a function once the work queued so far has finished.\n\n"
             "Later work on the stream waits for the callback.\n\n"
             "Parameters\n"
             "----------\n"
             "callback : callable\n"
             "    Called as callback(stream, status, arg) on a driver thread; status is 0 or a\n"
             "    CUresult. It must not call CUDA. An exception it raises goes to\n"
             "    sys.unraisablehook.\n"
             "arg : object, optional\n"
             "    Passed to `callback`.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> s.add_callback(lambda stream, status, arg: print('done', status, arg), 'x')\n"
             ">>> s.synchronize()\n"
             "done 0 x");

PyDoc_STRVAR(stream_record_doc, "record($self, /, event=None)\n--\n\n"
                                "Record an event on the stream.\n\n"
                                "Parameters\n"
                                "----------\n"
                                "event : Event, optional\n"
                                "    The event to record; None makes a new timing event.\n\n"
                                "Returns\n"
                                "-------\n"
                                "Event\n"
                                "    The event recorded.\n\n"
                                "Examples\n"
                                "--------\n"
                                ">>> s = gpuhost.stream()\n"
                                ">>> start = s.record()\n"
                                ">>> d = gpuhost.to_device(np.zeros(1 << 20), stream=s)\n"
                                ">>> end = s.record()\n"
                                ">>> end.synchronize()\n"
                                ">>> ms = start.elapsed_time(end)");

PyDoc_STRVAR(stream_wait_event_doc,
             "wait_event($self, event, /)\n--\n\n"
             "Make later work on the stream wait until `event` has completed.\n\n"
             "The host does not wait. The event may be another device's.\n\n"
             "Parameters\n"
             "----------\n"
             "event : Event\n"
             "    A recorded event; one never recorded is complete.\n\n"
             "Raises\n"
             "------\n"
             "TypeError\n"
             "    If `event` is not an Event.\n\n"
             "Examples\n"
             "--------\n"
             ">>> a, b = gpuhost.stream(), gpuhost.stream()\n"
             ">>> d = gpuhost.to_device(np.arange(4), stream=a)\n"
             ">>> b.wait_event(a.record())  # b's later work sees d's data\n"
             ">>> h = d.copy_to_host(stream=b)");

PyDoc_STRVAR(
    stream_launch_host_func_doc,
    "launch_host_func($self, /, fn, arg)\n--\n\n"
    "Call fn(arg) on a driver thread once the work queued so far has finished.\n\n"
    "cuLaunchHostFunc: unlike add_callback(), it is captured into a graph while the stream\n"
    "captures (and then runs at each launch of the graph). `fn` must not call CUDA; an\n"
    "exception it raises goes to sys.unraisablehook.\n\n"
    "Parameters\n"
    "----------\n"
    "fn : callable\n"
    "    The function.\n"
    "arg : object\n"
    "    Its argument.\n\n"
    "Raises\n"
    "------\n"
    "TypeError\n"
    "    If `fn` is not callable.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> s.launch_host_func(print, 'reached')\n"
    ">>> s.synchronize()\n"
    "reached");

PyDoc_STRVAR(
    stream___cuda_stream___doc,
    "__cuda_stream__($self, /)\n--\n\n"
    "The CUDA stream protocol: (0, handle).\n\n"
    "Other libraries that take a stream object (cuda.core, CuPy) read the CUstream from it.\n\n"
    "Returns\n"
    "-------\n"
    "tuple of int\n"
    "    The protocol's version, 0, and the CUstream as an int.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> s.__cuda_stream__() == (0, s.handle)\n"
    "True");

PyDoc_STRVAR(stream_handle_doc,
             "The CUstream as an int.\n\n"
             "0 for the default stream, 1 for the legacy one and 2 for the per-thread one; int(s)\n"
             "gives the same.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> s.handle == int(s)\n"
             "True\n"
             ">>> gpuhost.legacy_default_stream().handle\n"
             "1");

PyDoc_STRVAR(stream_ptr_doc, "The CUstream as an int (CuPy's name).\n\n"
                             "Examples\n"
                             "--------\n"
                             ">>> s = gpuhost.stream()\n"
                             ">>> s.ptr == s.handle\n"
                             "True");

PyDoc_STRVAR(stream_done_doc, "True if all queued work has finished.\n\n"
                              "The same as query(): it does not wait.\n\n"
                              "Examples\n"
                              "--------\n"
                              ">>> s = gpuhost.stream()\n"
                              ">>> d = gpuhost.to_device(np.arange(3), stream=s)\n"
                              ">>> s.synchronize()\n"
                              ">>> s.done\n"
                              "True");

PyDoc_STRVAR(stream_priority_doc,
             "The stream's priority, where lower numbers run first (0 is the lowest).\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.stream().priority\n"
             "0\n"
             ">>> gpuhost.stream(priority=-1).priority\n"
             "-1");

PyDoc_STRVAR(stream_non_blocking_doc,
             "Whether the stream does not synchronize with the legacy default stream.\n\n"
             "Examples\n"
             "--------\n"
             ">>> gpuhost.stream().non_blocking\n"
             "False\n"
             ">>> gpuhost.stream(non_blocking=True).non_blocking\n"
             "True");

PyDoc_STRVAR(stream_context_doc, "The Context the stream belongs to.\n\n"
                                 "Examples\n"
                                 "--------\n"
                                 ">>> gpuhost.stream().context is gpuhost.current_context()\n"
                                 "True");

PyDoc_STRVAR(stream_external_doc,
             "True for a stream gpuhost refers to but did not make, which it never destroys.\n\n"
             "Such streams come from external_stream(), or a stream an imported array reported.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> s.external\n"
             "False\n"
             ">>> gpuhost.external_stream(s.handle).external\n"
             "True");

PyDoc_STRVAR(stream_device_doc, "The Device the stream belongs to.\n\n"
                                "Examples\n"
                                "--------\n"
                                ">>> with gpuhost.gpus[1]:\n"
                                "...     s = gpuhost.stream()\n"
                                ">>> s.device is gpuhost.gpus[1]\n"
                                "True");

PyDoc_STRVAR(stream_doc,
             "A CUDA stream: a queue of work that runs in order on the device.\n\n"
             "Make one with gpuhost.stream(); it is not made directly. Streams compare and hash by "
             "handle,\n"
             "and int(s) is the CUstream.\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> d = gpuhost.to_device(np.arange(3), stream=s)\n"
             ">>> h = d.copy_to_host(stream=s)\n"
             ">>> s.synchronize()\n"
             ">>> h\n"
             "array([0, 1, 2])");

PyDoc_STRVAR(
    stream_module__as_stream_doc,
    "_as_stream(stream, /)\n--\n\n"
    "A gpuhost Stream for any ``stream=`` argument (gpuhost internal).\n\n"
    "The argument is resolved as every ``stream=`` is: a gpuhost Stream (returned as it\n"
    "is), None or 0 (the default stream), or another library's stream (``__cuda_stream__``,\n"
    "CuPy's, PyTorch's), wrapped without being owned.\n\n"
    "Parameters\n"
    "----------\n"
    "stream : object\n"
    "    A stream argument.\n\n"
    "Returns\n"
    "-------\n"
    "Stream\n\n"
    "Raises\n"
    "------\n"
    "TypeError\n"
    "    `stream` is no stream gpuhost knows.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> gpuhost._core._as_stream(s) is s\n"
    "True\n"
    ">>> gpuhost._core._as_stream(None)\n"
    "<Default CUDA stream on <CUDA device 0 'Fake CUDA Device 0'>>");

#endif /* GH_STREAM_DOCS_H */
