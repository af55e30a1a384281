/* The current allocator of device arrays (allocator.c): its one owner.  None set, arrays
 * take their memory from the current context's default Pool; else from the Python
 * allocator gpuhost.memory (CuPy's set_allocator, using_allocator) or gpuhost.memory_manager
 * (numba's set_memory_manager) installed with _core.set_array_allocator.
 */
#ifndef GPUHOST_ALLOCATOR_H
#define GPUHOST_ALLOCATOR_H

#include "base/state.h"
#include "core/context.h"

/* `size` bytes for a device array in `ctx` (current), ordered on `stream` (NULL: the legacy
   default stream): *owner (a new reference keeping the memory alive), *ptr its address and
   *generation the context generation it belongs to.  Zero bytes always come from the pool.
   0, or -1 with the allocator's error, or a TypeError when it answered something other than
   an (owner, address) pair. */
int gh_array_memory(gh_state *st, gh_context *ctx, size_t size, PyObject *stream, PyObject **owner,
                    CUdeviceptr *ptr, uint64_t *generation);
extern PyMethodDef gh_allocator_methods[]; /* set_array_allocator, array_allocator, ... */

#endif /* GPUHOST_ALLOCATOR_H */
