/* capture.c: stream capture into graphs (Stream.begin_capture, end_capture, is_capturing). */
#ifndef GPUHOST_CAPTURE_H
#define GPUHOST_CAPTURE_H

#include "base/state.h"

/* Add the capture methods to the Stream type (after gh_stream_init_type); 0 or -1. */
int gh_capture_init(PyObject *module, gh_state *st);

#endif /* GPUHOST_CAPTURE_H */
