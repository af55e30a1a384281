/* fakecuda memory: the registry of live memory ranges (device, managed and pinned
 * allocations, host registrations, IPC mappings) that every copy and memset (fk_copy.c)
 * translates its addresses through, the storage behind them and the device address space.
 * The entry points that make and query ranges are in fk_alloc.c, fk_host_memory.c,
 * fk_pointer.c and fk_ipc_memory.c (fk_memory.h).
 *
 * Device memory is host memory behind addresses that are not: they come from address space
 * reserved inaccessible (PROT_NONE: a host dereference faults) and are never handed out
 * twice in the process.  An access must lie inside one live range, so out-of-bounds and
 * use-after-free accesses are CUDA_ERROR_INVALID_VALUE instead of silent corruption.
 * Pinned, registered and managed memory answers at its host address (unified addressing).
 */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */

#include "fk_memory.h"

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

typedef struct fk_va_chunk {
    struct fk_va_chunk *next;
    uintptr_t base, end;
} fk_va_chunk;

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

/* Whether the range refuses writes: a read-only registration. */
static int
is_read_only(const fk_region *region)
{
    return region->type == FK_REGION_REGISTERED &&
           (region->flags & CU_MEMHOSTREGISTER_READ_ONLY) != 0;
}

/* ---- storage ---- */

/* New storage of `size` bytes holding garbage: whole mmap'ed pages if `host_visible` (the
   caller touches them, and a touch after they are unmapped faults), else heap.  NULL if out
   of memory.  Unlocked: filling a large one takes a while. */
fk_storage *
fk_storage_new(size_t size, int host_visible)
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
fk_storage *
fk_storage_borrow(void *p)
{
    fk_storage *storage = calloc(1, sizeof(*storage));

    if (storage != NULL) {
        storage->data = p;
        storage->refs = 1;
    }
    return storage;
}

/* Drop one reference; the last frees the bytes if they are ours.  Lock held. */
void
fk_storage_unref(fk_storage *storage)
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
int
fk_va_overlaps(uintptr_t addr, size_t len)
{
    for (const fk_va_chunk *chunk = fk_va_chunks; chunk != NULL; chunk = chunk->next) {
        if (addr < chunk->end && chunk->base < addr + len) {
            return 1;
        }
    }
    return 0;
}

/* ---- ranges ---- */

fk_region *
fk_region_first(void)
{
    return fk_regions;
}

/* The live range holding all of [addr, addr + len) (len >= 1), or NULL.  Lock held. */
fk_region *
fk_region_containing(uintptr_t addr, size_t len)
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
fk_region *
fk_region_at(uintptr_t addr, fk_region_type type)
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
    fk_storage_unref(region->storage); /* copies in flight keep the bytes a while */
    free(region);
}

void
fk_region_free(fk_region *region)
{
    fk_resource_remove(&region->res);
    region_destroy(&region->res);
}

/* Register a `type` range of `ctx` over `storage` (whose reference passes to it) at `base`
   (0: a new device address).  The range, or NULL when out of memory or address space (the
   storage reference is then dropped).  Lock held. */
fk_region *
fk_region_new(fk_region_type type, fk_context *ctx, uintptr_t base, size_t size,
              fk_storage *storage, unsigned int flags, CUdevice device)
{
    fk_region *region = calloc(1, sizeof(*region));

    if (region != NULL && base == 0) {
        base = va_take(size);
    }
    if (region == NULL || base == 0) {
        free(region);
        fk_storage_unref(storage);
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
    region = fk_region_containing(addr, len);
    if (region != NULL) {
        if ((side == FK_SIDE_HOST && fk_region_device_only(region)) ||
            (owner != NULL && fk_region_device_only(region) && region->res.ctx != owner) ||
            (write && is_read_only(region))) {
            return CUDA_ERROR_INVALID_VALUE;
        }
        span->host = region->storage->data + (addr - region->base);
        span->pin = region->storage;
        span->pin->refs++;
        return CUDA_SUCCESS;
    }
    /* Host memory outside every range, never a (dead or out-of-bounds) device address. */
    if (side == FK_SIDE_DEVICE || addr == 0 || fk_va_overlaps(addr, len)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (region = fk_regions; write && region != NULL; region = region->next) {
        if (is_read_only(region) && fk_region_overlaps(region, addr, len)) {
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
        fk_storage_unref(span->pin);
    }
    memset(span, 0, sizeof(*span));
}

/* ---- freeing, for the free entry points ---- */

typedef struct {
    uintptr_t addr;
    fk_region_type type, alt;
    CUresult missing;
} fk_free_args;

/* Like the driver, no context need be current: the range names its own.  No wait either: a
   copy still queued on the memory completes into storage kept until it ran. */
static CUresult
free_range(fk_target *target, void *args)
{
    fk_free_args *a = args;
    fk_region *region = fk_region_at(a->addr, a->type);

    (void)target;
    if (region == NULL) {
        region = fk_region_at(a->addr, a->alt);
    }
    if (region == NULL || region->free_queued) { /* free_queued: already freed, in stream order */
        return a->missing;
    }
    fk_region_free(region);
    return CUDA_SUCCESS;
}

CUresult
fk_memory_free(gh_cu_id id, int args_ok, uintptr_t addr, fk_region_type type, fk_region_type alt,
               CUresult missing)
{
    fk_free_args args = {addr, type, alt, missing};

    return fk_call(id, args_ok, NULL, NULL, free_range, &args);
}

/* ---- control API ---- */

void *
fakecuda_host_view(unsigned long long addr, size_t len)
{
    fk_region *region;
    void *view = NULL;

    if (len == 0) {
        return NULL;
    }
    fk_lock();
    region = fk_region_containing((uintptr_t)addr, len);
    if (region != NULL) {
        view = region->storage->data + ((uintptr_t)addr - region->base);
    }
    fk_unlock();
    return view;
}

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
