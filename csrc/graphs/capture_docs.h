/* The docstrings of the Stream methods capture.c adds (begin_capture, end_capture,
 * is_capturing). */
#ifndef GPUHOST_CAPTURE_DOCS_H
#define GPUHOST_CAPTURE_DOCS_H

#include "base/base.h"

PyDoc_STRVAR(stream_is_capturing_doc,
             "is_capturing($self, /)\n--\n\n"
             "Whether the stream is capturing work into a CUDA graph (cuStreamIsCapturing).\n\n"
             "True between begin_capture() and end_capture() (or inside gpuhost.graph_capture()),\n"
             "when the work queued on the stream is recorded instead of run.\n\n"
             "Returns\n"
             "-------\n"
             "bool\n"
             "    False also for a capture an unsafe call invalidated (end_capture() raises).\n\n"
             "Examples\n"
             "--------\n"
             ">>> s = gpuhost.stream()\n"
             ">>> s.is_capturing()\n"
             "False\n"
             ">>> s.begin_capture()\n"
             ">>> s.is_capturing()\n"
             "True\n"
             ">>> g = s.end_capture()\n"
             ">>> s.is_capturing()\n"
             "False");

PyDoc_STRVAR(
    stream_begin_capture_doc,
    "begin_capture($self, /, mode='thread_local')\n--\n\n"
    "Start capturing the work queued on the stream into a graph (cuStreamBeginCapture).\n\n"
    "Work queued meanwhile does not run: end_capture() returns it as a Graph.\n"
    "gpuhost.graph_capture() is the context manager around the two calls.\n\n"
    "Parameters\n"
    "----------\n"
    "mode : {'thread_local', 'global', 'relaxed'}, optional\n"
    "    Which potentially unsafe CUDA calls (a cudaMalloc, a synchronization) the capture\n"
    "    refuses: 'thread_local' (the default) this thread's only, so that other threads'\n"
    "    work (PyTorch's, CuPy's) goes on; 'global' every thread's too, as PyTorch's own\n"
    "    capture does; 'relaxed' none, as CuPy's does.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> a = gpuhost.to_device(np.ones(256, np.float32))\n"
    ">>> b = gpuhost.device_array_like(a)\n"
    ">>> s.begin_capture()\n"
    ">>> b.copy_to_device(a, stream=s)  # recorded, not run\n"
    ">>> g = s.end_capture()\n"
    ">>> g.instantiate().launch(s)  # doctest: +SKIP");

PyDoc_STRVAR(
    stream_end_capture_doc,
    "end_capture($self, /)\n--\n\n"
    "End the capture begin_capture() started (cuStreamEndCapture).\n\n"
    "Returns\n"
    "-------\n"
    "Graph\n"
    "    The work captured.\n\n"
    "Raises\n"
    "------\n"
    "StreamCaptureError\n"
    "    If the capture was invalidated (an unsafe call during it), or the stream was not\n"
    "    capturing.\n\n"
    "Examples\n"
    "--------\n"
    ">>> s = gpuhost.stream()\n"
    ">>> a = gpuhost.to_device(np.arange(3))\n"
    ">>> b = gpuhost.device_array_like(a)\n"
    ">>> s.begin_capture()\n"
    ">>> b.copy_to_device(a, stream=s)  # recorded, not run\n"
    ">>> g = s.end_capture()\n"
    ">>> g.launch(s)\n"
    ">>> s.synchronize()\n"
    ">>> b.copy_to_host()\n"
    "array([0, 1, 2])\n"
    ">>> s.end_capture()\n"
    "Traceback (most recent call last):\n"
    "    ...\n"
    "gpuhost.errors.StreamCaptureError: end_capture() without begin_capture(): the stream is not "
    "capturing");

#endif /* GPUHOST_CAPTURE_DOCS_H */
