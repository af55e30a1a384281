/* fakecuda devices: cuDeviceGet* and cuDeviceTotalMem over fixed device profiles.
 *
 * Device 0 looks like an H100 SXM (cc 9.0, 132 SMs, 80 GB), device 1 like an A100 (cc 8.0,
 * 108 SMs, 40 GiB); further devices copy device 1 on other PCI buses.  Every attribute
 * number from 1 to CU_DEVICE_ATTRIBUTE_MAX - 1 answers, 0 where a profile leaves it out.
 */
#include "fk_internal.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct {
    CUdevice_attribute attr;
    int value;
} fk_attr_value;

/* What the two profiles share (sm_80 and later). */
static const fk_attr_value fk_common_attrs[] = {
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y, 1024},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z, 64},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z, 65535},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    {CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY, 65536},
    {CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
    {CU_DEVICE_ATTRIBUTE_MAX_PITCH, 2147483647},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK, 65536},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_GPU_OVERLAP, 1},
    {CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT, 0},
    {CU_DEVICE_ATTRIBUTE_INTEGRATED, 0},
    {CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_MODE, CU_COMPUTEMODE_DEFAULT},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT, 512},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS, 1},
    {CU_DEVICE_ATTRIBUTE_ECC_ENABLED, 1},
    {CU_DEVICE_ATTRIBUTE_TCC_DRIVER, 0},
    {CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR, 2048},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING, 1},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_WIDTH_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_HEIGHT_ALTERNATE, 8192},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE, 32768},
    {CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT, 32},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_HEIGHT, 65536},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_WIDTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_HEIGHT, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE3D_DEPTH, 16384},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE1D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACE2D_LAYERED_LAYERS, 2048},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_SURFACECUBEMAP_LAYERED_LAYERS, 2046},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LINEAR_WIDTH, 268435456},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_WIDTH, 131072},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_HEIGHT, 65000},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_LINEAR_PITCH, 2097120},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT, 32768},
    {CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH, 32768},
    {CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_LOCAL_L1_CACHE_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR, 65536},
    {CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY, 1},
    {CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED, 0},
    {CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO, 2},
    {CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS, 0},
    {CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS, 1},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_PREEMPTION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_COOPERATIVE_MULTI_DEVICE_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR, 32},
    {CU_DEVICE_ATTRIBUTE_GENERIC_COMPRESSION_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE, 134213632},
    {CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK, 1024},
    {CU_DEVICE_ATTRIBUTE_SPARSE_CUDA_ARRAY_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_READ_ONLY_HOST_REGISTER_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_TIMELINE_SEMAPHORE_INTEROP_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS, 1},
    {CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR},
    {CU_DEVICE_ATTRIBUTE_DEFERRED_MAPPING_CUDA_ARRAY_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, 1},
    {CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, 1},
    {CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_IPC_EVENT_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_NUMA_CONFIG, CU_DEVICE_NUMA_CONFIG_NONE},
    {CU_DEVICE_ATTRIBUTE_NUMA_ID, -1},
    {CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID, 0},
    {CU_DEVICE_ATTRIBUTE_HOST_MEMORY_POOLS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_HOST_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED, 1},
};

static const fk_attr_value fk_h100_attrs[] = {
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 9},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 132},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1980000},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 2619000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 52428800},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 39321600},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 233472},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 232448},
    {CU_DEVICE_ATTRIBUTE_CLUSTER_LAUNCH, 1},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 4},
    {CU_DEVICE_ATTRIBUTE_TENSOR_MAP_ACCESS_SUPPORTED, 1},
    {CU_DEVICE_ATTRIBUTE_UNIFIED_FUNCTION_POINTERS, 1},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 0x233010de},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, 0x16c110de},
};

static const fk_attr_value fk_a100_attrs[] = {
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
    {CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
    {CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 108},
    {CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 1410000},
    {CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 1215000},
    {CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH, 5120},
    {CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, 41943040},
    {CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE, 31457280},
    {CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 3},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR, 167936},
    {CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN, 166912},
    {CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT, 1},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_DEVICE_ID, 0x20b010de},
    {CU_DEVICE_ATTRIBUTE_GPU_PCI_SUBSYSTEM_ID, 0x134f10de},
};

#define FK_COUNT(array) (sizeof(array) / sizeof((array)[0]))

typedef struct {
    const char *name;
    size_t total_mem;
    const fk_attr_value *attrs; /* on top of fk_common_attrs */
    size_t n_attrs;
} fk_profile;

static const fk_profile fk_h100 = {
    .name = "gpuhost fake H100",
    .total_mem = 85520809984u, /* what an H100 80GB HBM3 reports */
    .attrs = fk_h100_attrs,
    .n_attrs = FK_COUNT(fk_h100_attrs),
};

static const fk_profile fk_a100 = {
    .name = "gpuhost fake A100",
    .total_mem = 42949672960u, /* 40 GiB */
    .attrs = fk_a100_attrs,
    .n_attrs = FK_COUNT(fk_a100_attrs),
};

/* Written once by the first successful cuInit (lock held), read-only after. */
static fk_device fk_devices[FK_MAX_DEVICES];
static int fk_device_count;

/* splitmix64: distinct, deterministic UUID bytes per device. */
static uint64_t
mix64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15u;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9u;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebu;
    return x ^ (x >> 31);
}

static void
set_attrs(fk_device *dev, const fk_attr_value *values, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        dev->attrs[values[i].attr] = values[i].value;
    }
}

void
fk_devices_init(int count)
{
    for (int i = 0; i < count; i++) {
        const fk_profile *profile = i == 0 ? &fk_h100 : &fk_a100;
        fk_device *dev = &fk_devices[i];
        uint64_t hi = mix64(2 * (uint64_t)i), lo = mix64(2 * (uint64_t)i + 1);

        dev->ordinal = i;
        snprintf(dev->name, sizeof(dev->name), "%s", profile->name);
        dev->total_mem = profile->total_mem;
        dev->used_mem = 0;
        memset(dev->attrs, 0, sizeof(dev->attrs));
        set_attrs(dev, fk_common_attrs, FK_COUNT(fk_common_attrs));
        set_attrs(dev, profile->attrs, profile->n_attrs);
        dev->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] = 0;
        dev->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] = i == 0 ? 0x1b : 0x3b + (i - 1);
        dev->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] = 0;
        dev->attrs[CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID] = i;
        memcpy(dev->uuid.bytes, &hi, 8);
        memcpy(dev->uuid.bytes + 8, &lo, 8);
    }
    fk_device_count = count;
}

fk_device *
fk_device_get(CUdevice ordinal)
{
    return ordinal >= 0 && ordinal < fk_device_count ? &fk_devices[ordinal] : NULL;
}

CUresult
fk_on_device(const void *ordinal, fk_target *target)
{
    return fk_found(target, fk_device_get((CUdevice)(intptr_t)ordinal), CUDA_ERROR_INVALID_DEVICE);
}

static CUresult
get_count(fk_target *target, void *count)
{
    (void)target;
    *(int *)count = fk_device_count;
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetCount(int *count)
{
    return fk_call(GH_CU_DeviceGetCount, count != NULL, NULL, NULL, get_count, count);
}

static CUresult
get_ordinal(fk_target *target, void *device)
{
    *(CUdevice *)device = ((fk_device *)target->found)->ordinal;
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGet(CUdevice *device, int ordinal)
{
    return fk_call(GH_CU_DeviceGet, device != NULL, fk_on_device, FK_ORDINAL(ordinal), get_ordinal,
                   device);
}

/* A string answer: at most `len` bytes at `out`. */
typedef struct {
    char *out;
    int len;
} fk_text_args;

static CUresult
get_name(fk_target *target, void *args)
{
    fk_text_args *a = args;

    snprintf(a->out, (size_t)a->len, "%s", ((fk_device *)target->found)->name);
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetName(char *name, int len, CUdevice dev)
{
    fk_text_args args = {name, len};

    return fk_call(GH_CU_DeviceGetName, name != NULL && len > 0, fk_on_device, FK_ORDINAL(dev),
                   get_name, &args);
}

static CUresult
get_uuid(fk_target *target, void *uuid)
{
    *(CUuuid *)uuid = ((fk_device *)target->found)->uuid;
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    return fk_call(GH_CU_DeviceGetUuid, uuid != NULL, fk_on_device, FK_ORDINAL(dev), get_uuid,
                   uuid);
}

static CUresult
get_total_mem(fk_target *target, void *bytes)
{
    *(size_t *)bytes = ((fk_device *)target->found)->total_mem;
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceTotalMem(size_t *bytes, CUdevice dev)
{
    return fk_call(GH_CU_DeviceTotalMem, bytes != NULL, fk_on_device, FK_ORDINAL(dev),
                   get_total_mem, bytes);
}

typedef struct {
    int *pi;
    CUdevice_attribute attrib;
} fk_attribute_args;

static CUresult
get_attribute(fk_target *target, void *args)
{
    fk_attribute_args *a = args;

    *a->pi = ((fk_device *)target->found)->attrs[a->attrib];
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    fk_attribute_args args = {pi, attrib};

    return fk_call(GH_CU_DeviceGetAttribute,
                   pi != NULL && (int)attrib >= 1 && (int)attrib < CU_DEVICE_ATTRIBUTE_MAX,
                   fk_on_device, FK_ORDINAL(dev), get_attribute, &args);
}

/* The id as the real driver writes it (seen on the H200, driver 580): upper-case hex, the
   domain as 4 digits ("0000:1B:00.0") whatever the buffer's size, cut to the buffer below
   13 bytes. */
static CUresult
get_pci_bus_id(fk_target *target, void *args)
{
    const fk_device *device = target->found;
    fk_text_args *a = args;

    snprintf(a->out, (size_t)a->len, "%04X:%02X:%02X.0",
             (unsigned)device->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID],
             (unsigned)device->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID],
             (unsigned)device->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID]);
    return CUDA_SUCCESS;
}

CUresult
fk_DeviceGetPCIBusId(char *pciBusId, int len, CUdevice dev)
{
    fk_text_args args = {pciBusId, len};

    return fk_call(GH_CU_DeviceGetPCIBusId, pciBusId != NULL && len > 0, fk_on_device,
                   FK_ORDINAL(dev), get_pci_bus_id, &args);
}

typedef struct {
    CUdevice *dev;
    const char *pci_bus_id;
} fk_pci_args;

/* One hex field of 1 to `max` digits at *p, ended by `end` ('\0' for the string's end): its
   value, *p moved past the end; -1 for anything else. */
static long
hex_field(const char **p, int max, char end)
{
    long v = 0;
    int n = 0;
    for (; isxdigit((unsigned char)**p); (*p)++, n++) {
        v = v * 16 +
            (isdigit((unsigned char)**p) ? **p - '0' : toupper((unsigned char)**p) - 'A' + 10);
    }
    if (n == 0 || n > max || **p != end) {
        return -1;
    }
    if (end != '\0') {
        (*p)++;
    }
    return v;
}

/* The forms the driver documents, "[domain]:[bus]:[device].[function]",
   "[domain]:[bus]:[device]" and "[bus]:[device].[function]", hex of either case with at
   most 8 digits of domain (nvidia-smi's "00000000:..." form looks up on the real driver
   too; test_device.py holds both drivers to this), 2 of bus and device, 1 of function; else
   CUDA_ERROR_INVALID_VALUE. The device whose PCI attributes match (function 0), else
   CUDA_ERROR_INVALID_DEVICE. */
static CUresult
find_by_pci_bus_id(fk_target *target, void *args)
{
    fk_pci_args *a = args;
    const char *p = a->pci_bus_id;
    int colons = 0, dot = strchr(p, '.') != NULL;
    long domain = 0, bus, device, function = 0;

    (void)target;
    for (const char *c = p; *c; c++) {
        colons += *c == ':';
    }
    if (colons == 2 && ((domain = hex_field(&p, 8, ':')) < 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    if ((colons != 2 && !(colons == 1 && dot)) || (bus = hex_field(&p, 2, ':')) < 0 ||
        (device = hex_field(&p, 2, dot ? '.' : '\0')) < 0 ||
        (dot && (function = hex_field(&p, 1, '\0')) < 0)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (int i = 0; i < fk_device_count; i++) {
        const fk_device *d = &fk_devices[i];
        if (function == 0 && d->attrs[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID] == domain &&
            d->attrs[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID] == bus &&
            d->attrs[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID] == device) {
            *a->dev = i;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_DEVICE;
}

CUresult
fk_DeviceGetByPCIBusId(CUdevice *dev, const char *pciBusId)
{
    fk_pci_args args = {dev, pciBusId};

    return fk_call(GH_CU_DeviceGetByPCIBusId, dev != NULL && pciBusId != NULL, NULL, NULL,
                   find_by_pci_bus_id, &args);
}
