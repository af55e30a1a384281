/* staging.c: pageable host copies through a pinned ring. */
#ifndef GPUHOST_STAGING_H
#define GPUHOST_STAGING_H

#include <stddef.h>

#include "base/cuda_api.h"

/* Bytes from which a pageable copy is staged: GPUHOST_STAGING_THRESHOLD both ways, else
   2 MiB (below that the driver's own copy is as fast: the ring's fixed costs are not paid
   back). */
size_t gh_staging_threshold(void);
/* Whether `host` is pageable memory (not pinned or registered with the driver). */
int gh_host_is_pageable(const void *host);
/* Copy nbytes between pageable `host` and `dptr` (to_host: device to host) on `stream`,
   through the staging ring, and wait for it; the context must be current and the GIL
   released.  The driver's result; on failure *failed names the call. */
CUresult gh_staged_copy(int to_host, void *host, CUdeviceptr dptr, size_t nbytes, CUstream stream,
                        gh_cu_id *failed);

#endif /* GPUHOST_STAGING_H */
