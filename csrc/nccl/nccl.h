/* csrc/nccl/'s public header: what module.c calls to add NCCL's types and functions to the
 * module.  NCCL's table is nccl_api.h (the fake NCCL includes it too); the Communicator's
 * layout and the collectives' helpers are private: nccl_internal.h.
 */
#ifndef GPUHOST_NCCL_H
#define GPUHOST_NCCL_H

#include "base/base.h"

/* The Communicator type (nccl_comm.c). */
int gh_nccl_comm_init_type(PyObject *module, gh_state *st);

/* NCCL's module functions and constants (nccl_api.c): the loader's floor, which calls
   nothing above it; module.c inits each NCCL file in turn. */
int gh_nccl_init(PyObject *module, gh_state *st);

/* The Registration and NcclMemory types, and nccl_mem_alloc (nccl_register.c). */
int gh_nccl_register_init(PyObject *module, gh_state *st);

#endif /* GPUHOST_NCCL_H */
