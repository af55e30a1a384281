/* csrc/launch/'s public header: code images (Module), Kernel and LaunchConfig and their
 * argument packing, and NVRTC programs, as graphs/, jit/ and module.c use them.  NVRTC's
 * table is nvrtc_api.h, included by launch/'s files only; what only they share is in
 * launch_internal.h.
 */
#ifndef GPUHOST_LAUNCH_H
#define GPUHOST_LAUNCH_H

#include "base/base.h"
#include "core/core.h"

/* ---- code_image.c ---- */
/* code_image.c: the Module type (a loaded CUmodule: a code image in a context). */
/* A loaded CUmodule. */
typedef struct {
    PyObject_HEAD
    gh_live_link link;   /* in the list of live Modules a Context.reset() unloads */
    gh_context *context; /* strong */
    uint64_t generation;
    CUmodule handle;       /* NULL once freed */
    PyObject *param_types; /* {symbol: ((kind, size, align), ...)} from the PTX, or None */
    PyObject *lowered;     /* {name expression: lowered name}, or None */
    PyObject *info_log;    /* str */
    int unloaded;          /* unload() was called: no more launches */
    int globals_out;       /* get_global() handed out addresses: free only at dealloc */
    PyObject *weakreflist;
} gh_module;

int gh_code_image_init_type(PyObject *module, gh_state *st);
/* 0 if module `m` can still be used by call `id`; else CudaAPIError and -1 (unloaded, or
   its context reset or closed). */
int gh_module_check_usable(gh_module *m, gh_cu_id id);

/* ---- kernel.c and kernel_args.c ---- */
/* Kernels' shared parts: the Kernel object's layout, a launch's configuration, and the
 * checking and packing of arguments (kernel_args.c) that launches (kernel.c) and graph
 * kernel nodes (graph.c) share.
 */
/* float16 arguments are packed with PyFloat_Pack2, public from Python 3.11. */
#if PY_VERSION_HEX < 0x030B0000
#define PyFloat_Pack2(x, p, le) _PyFloat_Pack2((x), (unsigned char *)(p), (le))
#endif

/* A parameter: where it goes in the argument buffer, and what it holds. */
typedef struct {
    uint32_t offset, size;
    char kind; /* 'i' integer or pointer, 'f' floating point, 's' struct (bytes), '?' unknown */
    /* Its C type, where the kernel's mangled name or prepare() says it (kernel_types.c): 0
       not known; 'p' pointer, 'i' signed and 'u' unsigned integer, 'n' char (either
       signedness), 'b' bool, 'f' floating point (half, float, double). */
    char ctype;
    /* For a pointer: the element an array passed must have (GH_ELEM_*), of elem_size bytes;
       GH_ELEM_ANY for void *, a struct's pointer, and where ctype is not known.  For an
       8-byte integer prepare() declared ('l', np.intp...): GH_ELEM_ADDRESS, it takes a
       device array's address too, as pycuda packs an allocation's. */
    char elem;
    uint8_t elem_size;
} gh_param;

/* The elements a typed pointer parameter takes: NumPy's kinds 'i', 'u', 'f', and these. */
#define GH_ELEM_ANY      0
#define GH_ELEM_BYTE     '1' /* char, signed/unsigned char, bool: int8, uint8 or bool */
#define GH_ELEM_BFLOAT16 'B' /* __nv_bfloat16: DLPack's bfloat16, or a 2-byte NumPy 'V' */
#define GH_ELEM_POINTER  'P' /* T **: 8-byte integers (device addresses) */
#define GH_ELEM_ADDRESS  'A' /* not a pointer: an integer that takes an array's address */

typedef struct {
    PyObject_HEAD
    gh_module *module; /* strong */
    CUfunction handle;
    PyObject *name;   /* str: as asked for */
    PyObject *symbol; /* str: the symbol in the module */
    int nparams;      /* -1 when they cannot be known (old driver, no PTX) */
    gh_param *params;
    PyObject *ctypes; /* tuple: each parameter's C type (str) or None; NULL: none known */
    size_t argsize;   /* bytes of the whole argument buffer */
    int max_threads, max_dyn_shared, optin_shared, static_shared, cc_major;
    unsigned int max_block[3], max_grid[3];
    PyObject *last_key, *last_config; /* the last kernel[...], reused when asked again */
    vectorcallfunc vectorcall;
} gh_kernel;

/* Everything about one launch but its arguments. */
typedef struct {
    unsigned int grid[3], block[3], cluster[3]; /* cluster[0] == 0: no cluster */
    unsigned int shared;
    int cooperative;
    PyObject *stream; /* NULL: the default stream */
} launch_dims;

typedef struct {
    PyObject_HEAD
    gh_kernel *kernel; /* strong */
    launch_dims dims;  /* dims.stream strong */
    vectorcallfunc vectorcall;
} gh_launchconfig;

/* An argument buffer: the packed values and the pointer array the driver takes. */
#define GH_SMALL_ARGS   32
#define GH_SMALL_ARGBUF 512

typedef struct {
    union {
        max_align_t align;
        char bytes[GH_SMALL_ARGBUF];
    } small;
    void *small_ptrs[GH_SMALL_ARGS];
    char *buf;   /* small.bytes, or a PyMem block holding values and pointers */
    void **ptrs; /* the driver's kernelParams */
} gh_argbuf;

/* gh_kernel_make_dims in two steps: reading the options (no kernel needed), and checking
   them against kernel k's limits.  0, or -1 with ValueError/TypeError. */
int gh_launch_dims_parse(launch_dims *d, PyObject *grid, PyObject *block, PyObject *stream,
                         PyObject *shared, int cooperative, PyObject *cluster);
int gh_kernel_check_dims(gh_kernel *k, const launch_dims *d);

/* Launch kernel k with dims `d` (checked) and its arguments already packed: `params` is
   the driver's kernelParams, one pointer per parameter.  The stream (d->stream, borrowed)
   is resolved here; a launch into a capture is recorded as launch() records it.  0, or -1
   with the error set. */
int gh_kernel_launch_params(gh_kernel *k, const launch_dims *d, void **params);

/* Getters of a type's launch_dims fields: `offset` (the getset closure) is the field's
   offset in the object, grid/block (a tuple) or shared (an int). */
PyObject *gh_get_dims_field(PyObject *self, void *offset);
PyObject *gh_get_shared_field(PyObject *self, void *offset);
/* Whether two launch keys (kernel[...]'s) are the same object or tuples of the same
   objects: a repeated configuration recognized without calling any comparison. */
int gh_same_items(PyObject *a, PyObject *b);

/* Check that kernel k can be launched now (its module loaded, its context alive, its
   parameters known) with `nargs` arguments.  0, or -1 with the error set. */
int gh_kernel_check_call(gh_kernel *k, gh_cu_id id, Py_ssize_t nargs);

/* Check and pack `args` (nargs == k->nparams, checked) into `ab`, for a launch on the
   resolved stream `ref` (NULL: a launch with no stream, as a graph's kernel node), which
   is ordered after the streams of other libraries' arrays among them; release with
   gh_argbuf_free even on failure.  0, or -1 with TypeError/OverflowError/ValueError naming
   the parameter. */
int gh_kernel_pack(gh_state *st, gh_kernel *k, PyObject *const *args, Py_ssize_t nargs,
                   const gh_stream_ref *ref, gh_argbuf *ab);
void gh_argbuf_free(gh_argbuf *ab);

int gh_kernel_init_type(PyObject *module, gh_state *st);
/* Add `kernel` to list `list` (a graph's or a capture's Kernels) unless it is there, and
   the items of list `from` missing from list `to`; 0 or -1. */
int gh_kernel_list_add(PyObject *list, PyObject *kernel);
int gh_kernel_list_merge(PyObject *to, PyObject *from);

/* ---- program.c ---- */
/* program.c: NVRTC compilation (nvrtc_compile, nvrtc_supported_archs). */
extern PyMethodDef gh_program_methods[];

/* ---- nvrtc_api.c ---- */
/* nvrtc_version, nvrtc_library: module functions. */
extern PyMethodDef gh_nvrtc_methods[];

#endif /* GPUHOST_LAUNCH_H */
