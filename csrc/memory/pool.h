/* Memory pools, the default allocator of device memory: the Pool type (pool.c) and the
 * engine's entry points for other files (pool_engine.c).
 */
#ifndef GPUHOST_POOL_H
#define GPUHOST_POOL_H

#include "memory.h"

int gh_pool_init_type(PyObject *module, gh_state *st);
/* `size` bytes of device memory in `ctx` from its default Pool (GPUHOST_ALLOCATOR picks
   its mode), ordered on `stream` (a stream= argument; NULL: the legacy default stream).
   New reference, or NULL with CudaOutOfMemoryError (after releasing held blocks and
   collecting garbage once) or another error. */
gh_allocation *gh_pool_device_alloc(gh_state *st, gh_context *ctx, size_t size, PyObject *stream);
/* Give a pooled Allocation's memory back to its Pool and clear a->pool; never raises. */
void gh_pool_release(gh_allocation *a);
/* Free the blocks every Pool of `ctx` holds, before the context is reset or released. */
void gh_pool_context_ending(gh_state *st, gh_context *ctx);

#endif /* GPUHOST_POOL_H */
