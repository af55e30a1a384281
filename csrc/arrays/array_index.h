/* array_index.c: DeviceArray element reads and assignment in C. */
#ifndef GPUHOST_ARRAY_INDEX_H
#define GPUHOST_ARRAY_INDEX_H

#include "base/state.h"

/* Register the indexing devicearray.c calls (state.h's gh_array_hooks); 0. */
int gh_array_index_init(PyObject *module, gh_state *st);

#endif /* GPUHOST_ARRAY_INDEX_H */
