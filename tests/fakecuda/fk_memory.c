/* fakecuda memory: device, managed and pinned allocations, host registrations, IPC memory
 * handles, pointer queries, and the registry of live ranges every copy and memset
 * (fk_copy.c) translates its addresses through.
 *
 * Device memory is host memory behind addresses that are not: they come from address space
 * reserved inaccessible (PROT_NONE: a host dereference faults) and are never handed out
 * twice in the process.  An access must lie inside one live range, so out-of-bounds and
 * use-after-free accesses are CUDA_ERROR_INVALID_VALUE instead of silent corruption.
 * Pinned, registered and managed memory answers at its host address (unified addressing).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include "fk_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define FK_GARBAGE  0xA5                            /* what new memory holds */
#define FK_VA_HINT  ((uintptr_t)0x7e0000000000)     /* where device addresses start if free */
#define FK_VA_CHUNK ((size_t)64 << 30)              /* address space reserved at a time */
#define FK_VA_ALIGN ((size_t)512)                   /* of every device address */
#define FK_VA_GUARD ((size_t)64 << 10)              /* addresses left unused after each range */
#define FK_VA_SLACK (FK_VA_ALIGN + FK_VA_GUARD + 1) /* sizes above SIZE_MAX - this get none */

#define FK_MEMHOSTALLOC_FLAGS                                                                      \
    (CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED)
#define FK_MEMHOSTREGISTER_FLAGS                                                                   \
    (CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_READ_ONLY)

typedef enum {
    FK_REGION_DEVICE,     /* cuMemAlloc: a fake address over heap storage */
    FK_REGION_MANAGED,    /* cuMemAllocManaged: the device address is the host address */
    FK_REGION_PINNED,     /* cuMemHostAlloc */
    FK_REGION_REGISTERED, /* cuMemHostRegister: the caller's memory */
    FK_REGION_IPC,        /* cuIpcOpenMemHandle: a fake address over a device range's storage */
} fk_region_type;

struct fk_storage {
    unsigned char *data;
    size_t mapped; /* bytes mmap'ed at data (host-visible kinds); 0: malloc'ed */
    long refs;     /* the ranges over it and the accesses in flight */
    int owned;     /* 0: the caller's memory (a registration), never freed here */
};

typedef struct fk_region {
    fk_resource res;               /* first; its kind is region_kind(type) */
    struct fk_region *prev, *next; /* in fk_regions */
    fk_region_type type;
    uintptr_t base;
    size_t size;
    fk_storage *storage;
    CUdevice device;    /* where the bytes are */
    unsigned int flags; /* as allocated, registered or opened with */
    unsigned long long buffer_id;
    int pooled;      /* from the device's default pool (cuMemAllocAsync): its bytes go back there */
    int free_queued; /* cuMemFreeAsync was called: the free waits in the work queue */
} fk_region;

typedef struct fk_va_chunk {
    struct fk_va_chunk *next;
    uintptr_t base, end;
} fk_va_chunk;

/* What cuIpcGetMemHandle writes at the start of the 64 bytes. */
typedef struct {
    char magic[8];
    uint64_t pid;
    uint64_t instance; /* which copy of the fake made it: the address of fk_regions */
    uint64_t base;
    uint64_t buffer_id;
} fk_ipc_mem;

_Static_assert(sizeof(fk_ipc_mem) <= CU_IPC_HANDLE_SIZE, "IPC memory handle too small");

static const char fk_ipc_mem_magic[8] = {'f', 'k', 'm', 'e', 'm', 'o', 'r', '1'};

/* All under the lock. */
static fk_region *fk_regions;           /* every live range, newest first */
static fk_va_chunk *fk_va_chunks;       /* every reservation; never unmapped */
static uintptr_t fk_va_next, fk_va_end; /* the unused rest of the newest one */
static unsigned long long fk_next_buffer_id = 1;
static long fk_bytes[FK__KINDS];

static fk_kind
region_kind(fk_region_type type)
{
    switch (type) {
        case FK_REGION_DEVICE:
        case FK_REGION_MANAGED:
            return FK_ALLOCATIONS;
        case FK_REGION_PINNED:
            return FK_HOST_ALLOCATIONS;
        case FK_REGION_REGISTERED:
            return FK_REGISTRATIONS;
        default:
            return FK_IPC_MAPPINGS;
    }
}

/* Whether the range answers at a fake device address (else at its host address). */
static int
is_device_only(const fk_region *region)
{
    return region->type == FK_REGION_DEVICE || region->type == FK_REGION_IPC;
}

static int
is_read_only(const fk_region *region)
{
    return region->type == FK_REGION_REGISTERED &&
           (region->flags & CU_MEMHOSTREGISTER_READ_ONLY) != 0;
}

/* Whether kernels could reach the range through a device pointer (DEVICEMAP for host). */
static int
is_mapped(const fk_region *region)
{
    if (region->type == FK_REGION_PINNED) {
        return (region->flags & CU_MEMHOSTALLOC_DEVICEMAP) != 0;
    }
    if (region->type == FK_REGION_REGISTERED) {
        return (region->flags & CU_MEMHOSTREGISTER_DEVICEMAP) != 0;
    }
    return 1;
}

/* ---- storage ---- */

/* New storage of `size` bytes holding garbage: whole mmap'ed pages if `host_visible` (the
   caller touches them, and a touch after they are unmapped faults), else heap.  NULL if out
   of memory.  Unlocked: filling a large one takes a while. */
static fk_storage *
storage_new(size_t size, int host_visible)
{
    fk_storage *storage = calloc(1, sizeof(*storage));
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    void *data = NULL;

    if (storage == NULL) {
        return NULL;
    }
    if (host_visible && size <= SIZE_MAX - page) {
        storage->mapped = (size + page - 1) / page * page;
        data =
            mmap(NULL, storage->mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        data = data == MAP_FAILED ? NULL : data;
    }
    else if (!host_visible) {
        data = malloc(size);
    }
    if (data == NULL) {
        free(storage);
        return NULL;
    }
    memset(data, FK_GARBAGE, size);
    storage->data = data;
    storage->refs = 1;
    storage->owned = 1;
    return storage;
}

/* Storage over the caller's memory at `p`, or NULL. */
static fk_storage *
storage_borrow(void *p)
{
    fk_storage *storage = calloc(1, sizeof(*storage));

    if (storage != NULL) {
        storage->data = p;
        storage->refs = 1;
    }
    return storage;
}

/* Drop one reference; the last frees the bytes if they are ours.  Lock held. */
static void
storage_unref(fk_storage *storage)
{
    if (--storage->refs > 0) {
        return;
    }
    if (storage->owned && storage->mapped != 0) {
        munmap(storage->data, storage->mapped);
    }
    else if (storage->owned) {
        free(storage->data);
    }
    free(storage);
}

/* ---- device address space ---- */

/* Reserve inaccessible address space for at least `need` bytes, after the newest reservation
   if that is free: a large chunk, or just `need` where the address space is limited
   (RLIMIT_AS).  0, or -1.  Lock held. */
static int
va_reserve(size_t need)
{
    size_t size = need > FK_VA_CHUNK ? need : FK_VA_CHUNK;
    void *hint = (void *)(fk_va_end != 0 ? fk_va_end : FK_VA_HINT);
    fk_va_chunk *chunk = malloc(sizeof(*chunk));
    const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
    void *base;

    if (chunk == NULL) {
        return -1;
    }
    base = mmap(hint, size, PROT_NONE, flags, -1, 0);
    if (base == MAP_FAILED && size > need) {
        size = need;
        base = mmap(hint, size, PROT_NONE, flags, -1, 0);
    }
    if (base == MAP_FAILED) {
        free(chunk);
        return -1;
    }
    chunk->base = (uintptr_t)base;
    chunk->end = chunk->base + size;
    chunk->next = fk_va_chunks;
    fk_va_chunks = chunk;
    fk_va_next = chunk->base;
    fk_va_end = chunk->end;
    return 0;
}

/* A device address for `size` bytes never handed out before in this process, or 0 when the
   address space cannot grow.  Lock held. */
static uintptr_t
va_take(size_t size)
{
    size_t need;
    uintptr_t addr;

    if (size > SIZE_MAX - FK_VA_SLACK) {
        return 0;
    }
    need = (size + FK_VA_ALIGN - 1) / FK_VA_ALIGN * FK_VA_ALIGN + FK_VA_GUARD;
    if (fk_va_end - fk_va_next < need && va_reserve(need) != 0) {
        return 0;
    }
    addr = fk_va_next;
    fk_va_next += need;
    return addr;
}

/* Whether [addr, addr + len) touches reserved device address space.  Lock held. */
static int
va_overlaps(uintptr_t addr, size_t len)
{
    for (const fk_va_chunk *chunk = fk_va_chunks; chunk != NULL; chunk = chunk->next) {
        if (addr < chunk->end && chunk->base < addr + len) {
            return 1;
        }
    }
    return 0;
}

/* ---- ranges ---- */

static int
overlaps(const fk_region *region, uintptr_t addr, size_t len)
{
    return addr < region->base + region->size && region->base < addr + len;
}

/* The live range holding all of [addr, addr + len) (len >= 1), or NULL.  Lock held. */
static fk_region *
region_containing(uintptr_t addr, size_t len)
{
    for (fk_region *region = fk_regions; region != NULL; region = region->next) {
        if (addr >= region->base && addr - region->base < region->size &&
            len <= region->size - (addr - region->base)) {
            return region;
        }
    }
    return NULL;
}

/* The live range of `type` starting exactly at `addr`, or NULL.  Lock held. */
static fk_region *
region_at(uintptr_t addr, fk_region_type type)
{
    for (fk_region *region = fk_regions; region != NULL; region = region->next) {
        if (region->base == addr && region->type == type) {
            return region;
        }
    }
    return NULL;
}

/* A range went, with its context or by its free call.  Lock held. */
static void
region_destroy(fk_resource *res)
{
    fk_region *region = (fk_region *)res;

    if (region->prev != NULL) {
        region->prev->next = region->next;
    }
    else {
        fk_regions = region->next;
    }
    if (region->next != NULL) {
        region->next->prev = region->prev;
    }
    fk_bytes[res->kind] -= (long)region->size;
    if (region->pooled) {
        fk_mempool_release(region->device, region->size); /* claimed from the pool */
    }
    else if (region->type == FK_REGION_DEVICE) {
        fk_device_get(region->device)->used_mem -= region->size; /* claimed by cuMemAlloc */
    }
    storage_unref(region->storage); /* copies in flight keep the bytes a while */
    free(region);
}

static void
region_free(fk_region *region)
{
    fk_resource_remove(&region->res);
    region_destroy(&region->res);
}

/* Register a `type` range of `ctx` over `storage` (whose reference passes to it) at `base`
   (0: a new device address).  The range, or NULL when out of memory or address space (the
   storage reference is then dropped).  Lock held. */
static fk_region *
region_new(fk_region_type type, fk_context *ctx, uintptr_t base, size_t size, fk_storage *storage,
           unsigned int flags, CUdevice device)
{
    fk_region *region = calloc(1, sizeof(*region));

    if (region != NULL && base == 0) {
        base = va_take(size);
    }
    if (region == NULL || base == 0) {
        free(region);
        storage_unref(storage);
        return NULL;
    }
    region->type = type;
    region->base = base;
    region->size = size;
    region->storage = storage;
    region->device = device;
    region->flags = flags;
    region->buffer_id = fk_next_buffer_id++;
    region->next = fk_regions;
    if (fk_regions != NULL) {
        fk_regions->prev = region;
    }
    fk_regions = region;
    fk_resource_add(&region->res, region_kind(type), ctx, region_destroy);
    fk_bytes[region_kind(type)] += (long)size;
    return region;
}

/* Finish an allocation whose storage was made unlocked (NULL: it could not be): register it
   as a `type` range of `ctx` in *out, unless memory or the context ran out meanwhile (the
   storage is then dropped).  Lock held. */
static CUresult
allocation_finish(fk_region **out, fk_region_type type, fk_context *ctx, fk_storage *storage,
                  size_t size, unsigned int flags)
{
    *out = NULL;
    if (storage == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (!ctx->alive) {
        storage_unref(storage);
        return CUDA_ERROR_CONTEXT_IS_DESTROYED;
    }
    *out = region_new(type, ctx, type == FK_REGION_DEVICE ? 0 : (uintptr_t)storage->data, size,
                      storage, flags, ctx->device);
    return *out != NULL ? CUDA_SUCCESS : CUDA_ERROR_OUT_OF_MEMORY;
}

/* ---- translation, for copies and memsets ---- */

CUresult
fk_span_resolve(fk_span *span, uintptr_t addr, size_t len, fk_side side, int write,
                const fk_context *owner)
{
    fk_region *region;

    memset(span, 0, sizeof(*span));
    if (len == 0 || addr > UINTPTR_MAX - len) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    region = region_containing(addr, len);
    if (region != NULL) {
        if ((side == FK_SIDE_HOST && is_device_only(region)) ||
            (owner != NULL && is_device_only(region) && region->res.ctx != owner) ||
            (write && is_read_only(region))) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        span->host = region->storage->data + (addr - region->base);
        span->pin = region->storage;
        span->pin->refs++;
        return CUDA_SUCCESS;
    }
    /* Host memory outside every range, never a (dead or out-of-bounds) device address. */
    if (side == FK_SIDE_DEVICE || addr == 0 || va_overlaps(addr, len)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (region = fk_regions; write && region != NULL; region = region->next) {
        if (is_read_only(region) && overlaps(region, addr, len)) {
            return CUDA_ERROR_INVALID_VALUE;
        }
    }
    span->host = (unsigned char *)addr;
    span->pageable = 1;
    return CUDA_SUCCESS;
}

void
fk_span_retain(fk_span *span)
{
    if (span->pin != NULL) {
        span->pin->refs++;
    }
}

void
fk_span_release(fk_span *span)
{
    if (span->pin != NULL) {
        storage_unref(span->pin);
    }
    memset(span, 0, sizeof(*span));
}

/* ---- allocation entry points ---- */

CUresult
fk_MemGetInfo(size_t *free_bytes, size_t *total_bytes)
{
    CUresult res = fk_enter(GH_CU_MemGetInfo, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_device *dev;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (free_bytes == NULL || total_bytes == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        dev = fk_device_get(ctx->device);
        *total_bytes = dev->total_mem;
        *free_bytes = dev->total_mem - dev->used_mem;
    }
    fk_unlock();
    return res;
}

/* The current context, taking the lock for the look. */
static CUresult
current_context(fk_context **ctx)
{
    CUresult res;

    fk_lock();
    res = fk_current_context(ctx);
    fk_unlock();
    return res;
}

CUresult
fk_MemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
    CUresult res = fk_enter(GH_CU_MemAlloc, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_device *dev = NULL;
    fk_storage *storage;
    fk_region *region;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (dptr == NULL || bytesize == 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        res = fk_unsafe_call_check(ctx);
    }
    if (res == CUDA_SUCCESS) {
        dev = fk_device_get(ctx->device);
        if (bytesize > dev->total_mem - dev->used_mem) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            dev->used_mem += bytesize; /* claimed now: the bytes are made unlocked */
        }
    }
    fk_unlock();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    storage = storage_new(bytesize, 0);
    fk_lock();
    res = allocation_finish(&region, FK_REGION_DEVICE, ctx, storage, bytesize, 0);
    if (res == CUDA_SUCCESS) {
        *dptr = region->base;
    }
    else {
        dev->used_mem -= bytesize;
    }
    fk_unlock();
    return res;
}

/* cuMemAllocManaged and cuMemHostAlloc: host-visible storage at its own address. */
static CUresult
host_visible_alloc(void **out, fk_region_type type, size_t bytesize, unsigned int flags)
{
    fk_context *ctx = NULL;
    fk_storage *storage;
    fk_region *region;
    CUresult res = current_context(&ctx);

    if (res == CUDA_SUCCESS) {
        fk_lock();
        res = fk_unsafe_call_check(ctx);
        fk_unlock();
    }
    if (res != CUDA_SUCCESS) {
        return res;
    }
    storage = storage_new(bytesize, 1);
    fk_lock();
    res = allocation_finish(&region, type, ctx, storage, bytesize, flags);
    if (res == CUDA_SUCCESS) {
        *out = (void *)region->base;
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    CUresult res = fk_enter(GH_CU_MemAllocManaged, FK_AFTER_INIT);
    void *p = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (dptr == NULL || bytesize == 0 ||
        (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    res = host_visible_alloc(&p, FK_REGION_MANAGED, bytesize, flags);
    if (res == CUDA_SUCCESS) {
        *dptr = (CUdeviceptr)(uintptr_t)p;
    }
    return res;
}

CUresult
fk_MemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_MemHostAlloc, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pp == NULL || bytesize == 0 || (Flags & ~(unsigned int)FK_MEMHOSTALLOC_FLAGS) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return host_visible_alloc(pp, FK_REGION_PINNED, bytesize, Flags);
}

/* Free the range of `type` (or `alt`) starting at `addr`: CUDA_SUCCESS, or `missing`. */
static CUresult
free_range(uintptr_t addr, fk_region_type type, fk_region_type alt, CUresult missing)
{
    fk_region *region;

    fk_lock();
    region = region_at(addr, type);
    if (region == NULL) {
        region = region_at(addr, alt);
    }
    if (region != NULL && region->free_queued) {
        region = NULL; /* already freed, in stream order */
    }
    if (region != NULL) {
        region_free(region);
    }
    fk_unlock();
    return region != NULL ? CUDA_SUCCESS : missing;
}

/* Like the driver, no context need be current: the allocation names its own.  No wait
   either: a copy still queued on the memory completes into storage kept until it ran. */
CUresult
fk_MemFree(CUdeviceptr dptr)
{
    CUresult res = fk_enter(GH_CU_MemFree, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    return free_range(dptr, FK_REGION_DEVICE, FK_REGION_MANAGED, CUDA_ERROR_INVALID_VALUE);
}

/* ---- stream-ordered allocations (cuMemAllocAsync / cuMemFreeAsync, fk_pool.c) ---- */

CUresult
fk_memory_alloc_pooled(fk_context *ctx, size_t size, CUdeviceptr *dptr)
{
    fk_storage *storage;
    fk_region *region;
    CUresult res;

    fk_lock();
    res = fk_mempool_claim(ctx->device, size); /* claimed now: the bytes are made unlocked */
    fk_unlock();
    if (res != CUDA_SUCCESS) {
        return res;
    }
    storage = storage_new(size, 0);
    fk_lock();
    res = allocation_finish(&region, FK_REGION_DEVICE, ctx, storage, size, 0);
    if (res == CUDA_SUCCESS) {
        region->pooled = 1;
        *dptr = region->base;
    }
    else {
        fk_mempool_release(ctx->device, size);
    }
    fk_unlock();
    return res;
}

typedef struct {
    fk_op op;
    uintptr_t base;
    unsigned long long buffer_id; /* the allocation meant: its address is never reused */
} fk_free_op;

/* On the worker: the queue reached the free. */
static void
run_free(fk_op *op)
{
    fk_free_op *f = (fk_free_op *)op;
    fk_region *region;

    fk_lock();
    region = region_at(f->base, FK_REGION_DEVICE);
    if (region != NULL && region->buffer_id == f->buffer_id) {
        region_free(region);
    }
    fk_unlock();
}

CUresult
fk_memory_free_ordered(uintptr_t dptr, fk_context *ctx, fk_lane *lane)
{
    fk_region *region = region_at(dptr, FK_REGION_DEVICE);
    fk_free_op *f;

    if (region == NULL || region->free_queued) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    f = calloc(1, sizeof(*f));
    if (f == NULL) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    f->op.run = run_free;
    f->base = region->base;
    f->buffer_id = region->buffer_id;
    /* Dropped with its context, the op frees nothing: the allocation went with it. */
    if (fk_op_enqueue(&f->op, ctx, lane) != CUDA_SUCCESS) {
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    region->free_queued = 1; /* the worker cannot run the op before the lock is let go */
    return CUDA_SUCCESS;
}

CUresult
fk_MemFreeHost(void *p)
{
    CUresult res = fk_enter(GH_CU_MemFreeHost, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    return free_range((uintptr_t)p, FK_REGION_PINNED, FK_REGION_PINNED, CUDA_ERROR_INVALID_VALUE);
}

CUresult
fk_MemHostGetDevicePointer(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_MemHostGetDevicePointer, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_region *region;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pdptr == NULL || p == NULL || Flags != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        region = region_containing((uintptr_t)p, 1);
        if (region == NULL ||
            (region->type != FK_REGION_PINNED && region->type != FK_REGION_REGISTERED) ||
            !is_mapped(region)) {
            res = CUDA_ERROR_INVALID_VALUE;
        }
        else {
            *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
        }
    }
    fk_unlock();
    return res;
}

/* Why [addr, addr + len) cannot be registered, or CUDA_SUCCESS.  Lock held. */
static CUresult
registration_check(uintptr_t addr, size_t len)
{
    if (va_overlaps(addr, len)) {
        return CUDA_ERROR_INVALID_VALUE; /* a device address, not host memory */
    }
    for (const fk_region *region = fk_regions; region != NULL; region = region->next) {
        if (!is_device_only(region) && overlaps(region, addr, len)) {
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
        }
    }
    return CUDA_SUCCESS;
}

CUresult
fk_MemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_MemHostRegister, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_storage *storage = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (p == NULL || bytesize == 0 || (uintptr_t)p > UINTPTR_MAX - bytesize ||
        (Flags & ~(unsigned int)FK_MEMHOSTREGISTER_FLAGS) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        res = registration_check((uintptr_t)p, bytesize);
    }
    if (res == CUDA_SUCCESS) {
        storage = storage_borrow(p);
        if (storage == NULL || region_new(FK_REGION_REGISTERED, ctx, (uintptr_t)p, bytesize,
                                          storage, Flags, ctx->device) == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemHostUnregister(void *p)
{
    CUresult res = fk_enter(GH_CU_MemHostUnregister, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (p == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return free_range((uintptr_t)p, FK_REGION_REGISTERED, FK_REGION_REGISTERED,
                      CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

/* ---- pointer queries ---- */

CUresult
fk_MemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult res = fk_enter(GH_CU_MemGetAddressRange, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_region *region;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        region = region_containing(dptr, 1);
        if (region == NULL) {
            res = CUDA_ERROR_NOT_FOUND;
        }
        else {
            if (pbase != NULL) {
                *pbase = region->base;
            }
            if (psize != NULL) {
                *psize = region->size;
            }
        }
    }
    fk_unlock();
    return res;
}

/* The value of `attribute` of `ptr` in `region` into `data` (types as cuda.h documents).
   Lock held. */
static CUresult
pointer_attribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr,
                  const fk_region *region)
{
    fk_context *ctx = NULL;
    CUresult res;

    switch (attribute) {
        case CU_POINTER_ATTRIBUTE_CONTEXT:
            *(CUcontext *)data = region->res.ctx;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_MEMORY_TYPE:
            *(unsigned int *)data =
                region->type == FK_REGION_PINNED || region->type == FK_REGION_REGISTERED
                    ? CU_MEMORYTYPE_HOST
                    : CU_MEMORYTYPE_DEVICE; /* managed memory too, as the driver */
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
            res = fk_current_context(&ctx); /* the pointer kernels of the current one use */
            if (res == CUDA_SUCCESS && !is_mapped(region)) {
                res = CUDA_ERROR_INVALID_VALUE;
            }
            if (res == CUDA_SUCCESS) {
                *(CUdeviceptr *)data = ptr;
            }
            return res;
        case CU_POINTER_ATTRIBUTE_HOST_POINTER:
            if (is_device_only(region)) {
                return CUDA_ERROR_INVALID_VALUE;
            }
            *(void **)data = (void *)(uintptr_t)ptr;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_BUFFER_ID:
            *(unsigned long long *)data = region->buffer_id;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_IS_MANAGED:
            *(unsigned int *)data = region->type == FK_REGION_MANAGED;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL:
            *(int *)data = region->device;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
            *(CUdeviceptr *)data = region->base;
            return CUDA_SUCCESS;
        case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
            *(size_t *)data = region->size;
            return CUDA_SUCCESS;
        default:
            return CUDA_ERROR_INVALID_VALUE; /* not implemented by the fake */
    }
}

CUresult
fk_PointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
    CUresult res = fk_enter(GH_CU_PointerGetAttribute, FK_AFTER_INIT);
    fk_region *region;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (data == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    region = region_containing(ptr, 1);
    res =
        region != NULL ? pointer_attribute(data, attribute, ptr, region) : CUDA_ERROR_INVALID_VALUE;
    fk_unlock();
    return res;
}

/* ---- IPC ---- */

CUresult
fk_IpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
    CUresult res = fk_enter(GH_CU_IpcGetMemHandle, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_region *region;
    fk_ipc_mem ipc;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pHandle == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        region = region_containing(dptr, 1); /* any address inside names the allocation */
        if (region == NULL || region->type != FK_REGION_DEVICE) {
            res = CUDA_ERROR_INVALID_VALUE;
        }
        else {
            memcpy(ipc.magic, fk_ipc_mem_magic, sizeof(ipc.magic));
            ipc.pid = (uint64_t)getpid();
            ipc.instance = (uint64_t)(uintptr_t)&fk_regions;
            ipc.base = region->base;
            ipc.buffer_id = region->buffer_id;
            memset(pHandle, 0, sizeof(*pHandle));
            memcpy(pHandle->reserved, &ipc, sizeof(ipc));
        }
    }
    fk_unlock();
    return res;
}

/* The live device allocation a handle names, or NULL.  Lock held.
   The fake cannot share memory across processes: a handle made by another process (or by
   another copy of the fake loaded in this one) is refused with CUDA_ERROR_INVALID_VALUE.
   The real driver refuses the opposite, a handle opened in the process that made it, which
   is the one case the fake serves; IPC between processes is tested on a real GPU. */
static fk_region *
exported_region(const CUipcMemHandle *handle)
{
    fk_ipc_mem ipc;
    fk_region *region;

    memcpy(&ipc, handle->reserved, sizeof(ipc));
    if (memcmp(ipc.magic, fk_ipc_mem_magic, sizeof(ipc.magic)) != 0 ||
        ipc.pid != (uint64_t)getpid() || ipc.instance != (uint64_t)(uintptr_t)&fk_regions) {
        return NULL;
    }
    region = region_at((uintptr_t)ipc.base, FK_REGION_DEVICE);
    return region != NULL && region->buffer_id == ipc.buffer_id ? region : NULL;
}

CUresult
fk_IpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
    CUresult res = fk_enter(GH_CU_IpcOpenMemHandle, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_region *source, *alias;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    if (pdptr == NULL || (Flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) != 0) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    fk_lock();
    res = fk_current_context(&ctx);
    if (res == CUDA_SUCCESS) {
        source = exported_region(&handle);
        res = source != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    }
    if (res == CUDA_SUCCESS && source->device != ctx->device &&
        !fk_peer_supported(ctx->device, source->device)) {
        res = CUDA_ERROR_MAP_FAILED; /* another device's memory, and no peer path to it */
    }
    if (res == CUDA_SUCCESS) {
        /* A new address over the same bytes, which outlive the source while it is open. */
        source->storage->refs++;
        alias =
            region_new(FK_REGION_IPC, ctx, 0, source->size, source->storage, Flags, source->device);
        if (alias == NULL) {
            res = CUDA_ERROR_OUT_OF_MEMORY;
        }
        else {
            *pdptr = alias->base;
        }
    }
    fk_unlock();
    return res;
}

CUresult
fk_IpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult res = fk_enter(GH_CU_IpcCloseMemHandle, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    return free_range(dptr, FK_REGION_IPC, FK_REGION_IPC, CUDA_ERROR_INVALID_VALUE);
}

/* ---- control API ---- */

long
fakecuda_bytes(const char *kind)
{
    int index = fk_kind_lookup(kind);
    long bytes;

    if (index != FK_ALLOCATIONS && index != FK_HOST_ALLOCATIONS && index != FK_REGISTRATIONS &&
        index != FK_IPC_MAPPINGS) {
        return -1;
    }
    fk_lock();
    bytes = fk_bytes[index];
    fk_unlock();
    return bytes;
}

/* ---- managed-memory hints: checked, with no effect (the double has one memory) ---- */

/* A location the hints accept: a device that exists, or the host.  Lock held. */
static CUresult
hint_location(CUmemLocation location)
{
    if (location.type == CU_MEM_LOCATION_TYPE_HOST) {
        return CUDA_SUCCESS;
    }
    if (location.type != CU_MEM_LOCATION_TYPE_DEVICE) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    return fk_device_get(location.id) != NULL ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

/* [devPtr, devPtr + count) inside one managed range.  Lock held. */
static CUresult
hint_range(CUdeviceptr devPtr, size_t count)
{
    fk_region *region = count > 0 ? region_containing(devPtr, count) : NULL;
    return region != NULL && region->type == FK_REGION_MANAGED ? CUDA_SUCCESS
                                                               : CUDA_ERROR_INVALID_VALUE;
}

CUresult
fk_MemPrefetchAsync(CUdeviceptr devPtr, size_t count, CUmemLocation location, unsigned int flags,
                    CUstream hStream)
{
    CUresult res = fk_enter(GH_CU_MemPrefetchAsync, FK_AFTER_INIT);
    fk_context *ctx = NULL;
    fk_lane *lane = NULL;

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = flags != 0 ? CUDA_ERROR_INVALID_VALUE : fk_stream_lane(hStream, &ctx, &lane);
    if (res == CUDA_SUCCESS) {
        res = hint_range(devPtr, count);
    }
    if (res == CUDA_SUCCESS) {
        res = hint_location(location);
    }
    fk_unlock();
    return res;
}

CUresult
fk_MemAdvise(CUdeviceptr devPtr, size_t count, CUmem_advise advice, CUmemLocation location)
{
    CUresult res = fk_enter(GH_CU_MemAdvise, FK_AFTER_INIT);

    if (res != CUDA_SUCCESS) {
        return res;
    }
    fk_lock();
    res = (advice < CU_MEM_ADVISE_SET_READ_MOSTLY || advice > CU_MEM_ADVISE_UNSET_ACCESSED_BY)
              ? CUDA_ERROR_INVALID_VALUE
              : hint_range(devPtr, count);
    if (res == CUDA_SUCCESS) {
        res = hint_location(location);
    }
    fk_unlock();
    return res;
}
