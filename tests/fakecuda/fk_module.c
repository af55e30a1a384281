/* fakecuda modules, kernels and the JIT linker.  The fake cannot run device code: by default
 * every entry point here does its usual checks (call counting, injected faults,
 * initialization) and then returns CUDA_ERROR_NOT_SUPPORTED (docs/development/architecture.md).
 *
 * With fakecuda_kernels(1) (fk_kernel.c) cuModuleLoadDataEx accepts PTX text: each .entry
 * becomes a function whose parameters are laid out from their PTX types, as the real
 * driver's cuFuncGetParamInfo reports them, so launches (fk_kernel.c) can be recorded
 * byte for byte.  A module (live counter "modules") belongs to the context current at its
 * load; what was loaded stays usable after the mode is turned off, until it is unloaded or
 * its context dies.  Images that are not PTX (cubin, fatbin) are still not supported, nor
 * are module globals, occupancy and the JIT linker.
 */
#define _POSIX_C_SOURCE 200809L /* strdup, strndup */

#include "fk_internal.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FK_NUM_REGS               32
#define FK_DEFAULT_DYNAMIC_SHARED 49152 /* what a kernel may use without opting in */

typedef struct fk_module {
    fk_resource res; /* first: the handle is its address */
    fk_function *functions;
    size_t nfunctions;
} fk_module;

/* What a handle that names no live module or function gets: "not supported" while
   kernels are off (nothing could have been loaded), else an invalid handle.  Lock held. */
static CUresult
unknown_handle(void)
{
    return fk_kernels_enabled() ? CUDA_ERROR_INVALID_HANDLE : CUDA_ERROR_NOT_SUPPORTED;
}

static void
module_free(fk_module *m)
{
    for (size_t i = 0; m != NULL && i < m->nfunctions; i++) {
        free(m->functions[i].name);
        free(m->functions[i].params);
    }
    if (m != NULL) {
        free(m->functions);
    }
    free(m);
}

static void
module_destroy(fk_resource *res)
{
    module_free((fk_module *)res);
}

fk_function *
fk_function_find(CUfunction handle)
{
    uintptr_t h = (uintptr_t)handle;

    for (fk_resource *res = fk_resource_first(FK_MODULES); res != NULL; res = res->next) {
        fk_module *m = (fk_module *)res;
        uintptr_t first = (uintptr_t)m->functions;
        if (m->nfunctions > 0 && h >= first && h < first + m->nfunctions * sizeof(fk_function) &&
            (h - first) % sizeof(fk_function) == 0) {
            return &m->functions[(h - first) / sizeof(fk_function)];
        }
    }
    return NULL;
}

CUresult
fk_on_function(const void *handle, fk_target *target)
{
    return fk_found(target, fk_function_find((CUfunction)handle), unknown_handle());
}

/* The live module `handle` (target->found), else unknown_handle().  Lock held. */
static CUresult
on_module(const void *handle, fk_target *target)
{
    return fk_found(target, fk_resource_find(handle, FK_MODULES), unknown_handle());
}

/* ---- reading PTX ---- */

/* Whether `image` is PTX text: not a cubin or fatbin, printable up to its NUL, and with a
   .version or .entry directive.  Read no further than the first byte that is not text. */
static int
is_ptx(const unsigned char *image)
{
    static const char elf[4] = {0x7f, 'E', 'L', 'F'};
    static const char fatbin[4] = {0x50, (char)0xed, 0x55, (char)0xba};
    const char *text = (const char *)image;

    /* strncmp stops at a NUL: a shorter image is never read past its end */
    if (strncmp(text, elf, 4) == 0 || strncmp(text, fatbin, 4) == 0) {
        return 0;
    }
    for (size_t n = 0; image[n] != '\0'; n++) {
        if (image[n] < 0x20 && !isspace(image[n])) {
            return 0;
        }
    }
    return strstr(text, ".version") != NULL || strstr(text, ".entry") != NULL;
}

/* A copy of `text` with its comments turned into spaces, or NULL (no memory). */
static char *
strip_comments(const char *text)
{
    char *s = strdup(text);

    for (char *p = s; p != NULL && *p != '\0'; p++) {
        if (p[0] == '/' && p[1] == '/') {
            while (*p != '\0' && *p != '\n') {
                *p++ = ' ';
            }
            if (*p == '\0') {
                break;
            }
        }
        else if (p[0] == '/' && p[1] == '*') {
            char *end = strstr(p + 2, "*/");
            char *stop = end != NULL ? end + 2 : p + strlen(p);
            memset(p, ' ', (size_t)(stop - p));
            p = stop - 1;
        }
    }
    return s;
}

static int
is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '$' || c == '%' || c == '.';
}

/* The size of a PTX scalar type (".u64" -> 8), or 0 for none. */
static size_t
type_size(const char *tok, size_t len)
{
    static const struct {
        const char *name;
        size_t size;
    } types[] = {
        {".u8", 1},    {".s8", 1},     {".b8", 1},  {".u16", 2}, {".s16", 2}, {".b16", 2},
        {".f16", 2},   {".bf16", 2},   {".u32", 4}, {".s32", 4}, {".b32", 4}, {".f32", 4},
        {".f16x2", 4}, {".bf16x2", 4}, {".u64", 8}, {".s64", 8}, {".b64", 8}, {".f64", 8},
    };
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        if (strlen(types[i].name) == len && strncmp(types[i].name, tok, len) == 0) {
            return types[i].size;
        }
    }
    return 0;
}

/* The size and alignment of one parameter declaration [decl, end) (".param .align 8 .b8
   x[16]").  0, or -1 if it is not one. */
static int
parse_param(const char *decl, const char *end, size_t *size, size_t *align)
{
    size_t width = 0, explicit_align = 0, count = 1;
    int is_param = 0, arrays = 0;
    const char *p = decl;

    while (p < end) {
        const char *tok;
        size_t len;
        while (p < end && isspace((unsigned char)*p)) {
            p++;
        }
        if (p >= end) {
            break;
        }
        if (*p == '[') { /* an array dimension */
            char *stop;
            unsigned long n = strtoul(p + 1, &stop, 10);
            if (stop == p + 1 || stop >= end || *stop != ']' || n == 0) {
                return -1;
            }
            count *= n, arrays = 1;
            p = stop + 1;
            continue;
        }
        tok = p;
        while (p < end && !isspace((unsigned char)*p) && *p != '[') {
            p++;
        }
        len = (size_t)(p - tok);
        if (len == 6 && strncmp(tok, ".param", 6) == 0) {
            is_param = 1;
        }
        else if (len == 6 && strncmp(tok, ".align", 6) == 0) {
            char *stop;
            explicit_align = strtoul(p, &stop, 10);
            if (stop == p || explicit_align == 0 || (explicit_align & (explicit_align - 1))) {
                return -1;
            }
            p = stop;
        }
        else if (type_size(tok, len) != 0) {
            width = type_size(tok, len);
        }
    }
    if (!is_param || width == 0) {
        return -1;
    }
    *size = width * count;
    /* an array's own .align; a scalar's (a pointer's) is its pointee's */
    *align = arrays && explicit_align != 0 ? explicit_align : width;
    return 0;
}

/* Fill `f` from the parameter list [list, end) (between the parentheses).  CUDA_SUCCESS,
   CUDA_ERROR_INVALID_PTX or CUDA_ERROR_OUT_OF_MEMORY. */
static CUresult
parse_params(fk_function *f, const char *list, const char *end)
{
    size_t offset = 0, cap = 0;

    for (const char *p = list; p < end;) {
        const char *comma = memchr(p, ',', (size_t)(end - p));
        const char *stop = comma != NULL ? comma : end;
        const char *q = p;
        size_t size, align;
        while (q < stop && isspace((unsigned char)*q)) {
            q++;
        }
        if (q == stop) {
            if (comma != NULL || f->nparams > 0) {
                return CUDA_ERROR_INVALID_PTX; /* an empty declaration */
            }
            break;
        }
        if (parse_param(q, stop, &size, &align) < 0) {
            return CUDA_ERROR_INVALID_PTX;
        }
        if (f->nparams == cap) {
            fk_param *grown = realloc(f->params, (cap ? 2 * cap : 8) * sizeof(fk_param));
            if (grown == NULL) {
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            f->params = grown, cap = cap ? 2 * cap : 8;
        }
        offset = (offset + align - 1) / align * align;
        f->params[f->nparams].offset = offset;
        f->params[f->nparams++].size = size;
        offset += size;
        p = comma != NULL ? comma + 1 : end;
    }
    f->param_bytes = offset;
    return CUDA_SUCCESS;
}

/* Set `f`'s attributes as a fresh kernel of PTX `ptx_version` on device `dev` has them. */
static void
function_defaults(fk_function *f, int ptx_version, const fk_device *dev)
{
    memset(f->attrs, 0, sizeof(f->attrs));
    f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] =
        dev->attrs[CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK];
    f->attrs[CU_FUNC_ATTRIBUTE_NUM_REGS] = FK_NUM_REGS;
    f->attrs[CU_FUNC_ATTRIBUTE_PTX_VERSION] = ptx_version;
    f->attrs[CU_FUNC_ATTRIBUTE_BINARY_VERSION] =
        10 * dev->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] +
        dev->attrs[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR];
    f->attrs[CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES] = FK_DEFAULT_DYNAMIC_SHARED;
    f->attrs[CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT] = -1;
}

/* The performance directives between an entry's parameters (`p`) and its body: .maxntid
   (launch_bounds) or .reqntid x[, y[, z]] bound the threads per block, as the driver then
   reports them (CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) and refuses a larger block with
   CUDA_ERROR_INVALID_VALUE.  CUDA_SUCCESS or CUDA_ERROR_INVALID_PTX. */
static CUresult
parse_thread_limit(fk_function *f, const char *p)
{
    const char *body = strchr(p, '{');
    static const char *const names[] = {".maxntid", ".reqntid"};

    for (int i = 0; i < 2; i++) {
        const char *d = strstr(p, names[i]);
        unsigned long long threads = 1;
        if (d == NULL || (body != NULL && d > body)) {
            continue;
        }
        d += strlen(names[i]);
        for (int dim = 0; dim < 3; dim++) {
            char *end;
            unsigned long n;
            while (isspace((unsigned char)*d)) {
                d++;
            }
            n = strtoul(d, &end, 10);
            if (end == d || n == 0) {
                return CUDA_ERROR_INVALID_PTX;
            }
            threads *= n;
            for (d = end; isspace((unsigned char)*d); d++) {
            }
            if (*d != ',') {
                break;
            }
            d++;
        }
        if (threads < (unsigned long long)f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK]) {
            f->attrs[CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK] = (int)threads;
        }
    }
    return CUDA_SUCCESS;
}

/* The entries of `text` (comments stripped) into `m`.  CUDA_SUCCESS, CUDA_ERROR_INVALID_PTX
   or CUDA_ERROR_OUT_OF_MEMORY. */
static CUresult
parse_entries(fk_module *m, const char *text, fk_context *ctx)
{
    const fk_device *dev = fk_device_get(ctx->device);
    const char *version = strstr(text, ".version");
    int ptx_version = 90;
    size_t cap = 0;

    if (version != NULL) {
        unsigned int major = 0, minor = 0;
        if (sscanf(version + 8, " %u.%u", &major, &minor) != 2) {
            return CUDA_ERROR_INVALID_PTX;
        }
        ptx_version = (int)(10 * major + minor);
    }
    for (const char *p = text; (p = strstr(p, ".entry")) != NULL;) {
        const char *name, *after;
        fk_function *f;
        CUresult res;
        if ((p > text && is_ident(p[-1])) || !isspace((unsigned char)p[6])) {
            p += 6; /* part of a longer word */
            continue;
        }
        for (name = p + 6; isspace((unsigned char)*name); name++) {
        }
        for (after = name; is_ident(*after); after++) {
        }
        if (after == name) {
            return CUDA_ERROR_INVALID_PTX;
        }
        if (m->nfunctions == cap) {
            fk_function *grown = realloc(m->functions, (cap ? 2 * cap : 4) * sizeof(fk_function));
            if (grown == NULL) {
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            m->functions = grown, cap = cap ? 2 * cap : 4;
        }
        f = &m->functions[m->nfunctions++];
        memset(f, 0, sizeof(*f));
        f->module = m;
        f->ctx = ctx;
        function_defaults(f, ptx_version, dev);
        f->name = strndup(name, (size_t)(after - name));
        if (f->name == NULL) {
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        for (p = after; isspace((unsigned char)*p); p++) {
        }
        if (*p == '(') {
            const char *close = strchr(p, ')');
            if (close == NULL) {
                return CUDA_ERROR_INVALID_PTX;
            }
            res = parse_params(f, p + 1, close);
            if (res != CUDA_SUCCESS) {
                return res;
            }
            p = close + 1;
        }
        if ((res = parse_thread_limit(f, p)) != CUDA_SUCCESS) {
            return res;
        }
    }
    return CUDA_SUCCESS;
}

/* Write `message` to the JIT error log among `options`, if one was given. */
static void
jit_error_log(const char *message, unsigned int n, const CUjit_option *options, void **values)
{
    char *buf = NULL;
    size_t size = 0;

    for (unsigned int i = 0; i < n; i++) {
        if (options[i] == CU_JIT_ERROR_LOG_BUFFER) {
            buf = values[i];
        }
        else if (options[i] == CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES) {
            size = (size_t)(uintptr_t)values[i];
        }
    }
    if (buf != NULL && size > 0) {
        snprintf(buf, size, "%s", message);
    }
}

/* ---- entry points ---- */

typedef struct {
    CUmodule *module;
    const void *image;
    unsigned int n; /* JIT options */
    CUjit_option *options;
    void **values;
} fk_load_args;

/* Load a PTX image as a module of the current context. */
static CUresult
module_load(fk_target *target, void *args)
{
    fk_load_args *a = args;
    fk_module *m;
    char *text;
    CUresult res;

    if (!fk_kernels_enabled() || (a->image != NULL && !is_ptx(a->image))) {
        return CUDA_ERROR_NOT_SUPPORTED;
    }
    if (a->module == NULL || a->image == NULL ||
        (a->n > 0 && (a->options == NULL || a->values == NULL))) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    m = calloc(1, sizeof(*m));
    text = strip_comments(a->image);
    if (m == NULL || text == NULL) {
        free(text);
        free(m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    res = fk_on_current(NULL, target);
    if (res == CUDA_SUCCESS) {
        res = parse_entries(m, text, target->ctx);
    }
    if (res == CUDA_SUCCESS) {
        fk_resource_add(&m->res, FK_MODULES, target->ctx, module_destroy);
        *a->module = (CUmodule)m;
        m = NULL;
    }
    if (res == CUDA_ERROR_INVALID_PTX) {
        jit_error_log("fakecuda: cannot read the PTX's .entry parameter lists", a->n, a->options,
                      a->values);
    }
    free(text);
    module_free(m);
    return res;
}

CUresult
fk_ModuleLoadDataEx(CUmodule *module, const void *image, unsigned int numOptions,
                    CUjit_option *options, void **optionValues)
{
    fk_load_args args = {module, image, numOptions, options, optionValues};

    if (module != NULL) {
        *module = NULL;
    }
    return fk_call(GH_CU_ModuleLoadDataEx, 1, NULL, NULL, module_load, &args);
}

static CUresult
module_unload(fk_target *target, void *args)
{
    (void)args;
    fk_resource_remove(target->found);
    module_free(target->found);
    return CUDA_SUCCESS;
}

CUresult
fk_ModuleUnload(CUmodule hmod)
{
    return fk_call(GH_CU_ModuleUnload, 1, on_module, hmod, module_unload, NULL);
}

typedef struct {
    CUfunction *hfunc;
    const char *name;
} fk_get_function_args;

static CUresult
get_function(fk_target *target, void *args)
{
    fk_module *m = target->found;
    fk_get_function_args *a = args;

    if (a->hfunc == NULL || a->name == NULL) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    for (size_t i = 0; i < m->nfunctions; i++) {
        if (strcmp(m->functions[i].name, a->name) == 0) {
            *a->hfunc = (CUfunction)&m->functions[i];
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult
fk_ModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    fk_get_function_args args = {hfunc, name};

    return fk_call(GH_CU_ModuleGetFunction, 1, on_module, hmod, get_function, &args);
}

CUresult
fk_ModuleGetGlobal(CUdeviceptr *dptr, size_t *bytes, CUmodule hmod, const char *name)
{
    (void)dptr, (void)bytes, (void)hmod, (void)name;
    return fk_call(GH_CU_ModuleGetGlobal, 1, NULL, NULL, fk_not_supported, NULL);
}

typedef struct {
    CUfunction_attribute attrib;
    int value;
    int *pi; /* NULL: set the attribute to `value` */
} fk_func_attr_args;

static CUresult
get_attribute(fk_target *target, void *args)
{
    const fk_function *f = target->found;
    fk_func_attr_args *a = args;

    if (a->pi == NULL || (int)a->attrib < 0 || a->attrib >= CU_FUNC_ATTRIBUTE_MAX) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    *a->pi = f->attrs[a->attrib];
    return CUDA_SUCCESS;
}

CUresult
fk_FuncGetAttribute(int *pi, CUfunction_attribute attrib, CUfunction hfunc)
{
    fk_func_attr_args args = {attrib, 0, pi};

    return fk_call(GH_CU_FuncGetAttribute, 1, fk_on_function, hfunc, get_attribute, &args);
}

/* Whether `value` is one `attrib` of `f` may be set to (the read-only ones none). */
static int
settable(const fk_function *f, CUfunction_attribute attrib, int value)
{
    const fk_device *dev = fk_device_get(f->ctx->device);

    switch (attrib) {
        case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES:
            return value >= 0 &&
                   value <= dev->attrs[CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN] -
                                f->attrs[CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES];
        case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT:
            return value >= -1 && value <= 100;
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
        case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
        case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE:
            return value >= 0;
        case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
            return value == 0 || value == 1;
        default:
            return 0; /* read-only */
    }
}

static CUresult
set_attribute(fk_target *target, void *args)
{
    fk_function *f = target->found;
    fk_func_attr_args *a = args;

    if (!settable(f, a->attrib, a->value)) {
        return CUDA_ERROR_INVALID_VALUE;
    }
    f->attrs[a->attrib] = a->value;
    return CUDA_SUCCESS;
}

CUresult
fk_FuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value)
{
    fk_func_attr_args args = {attrib, value, NULL};

    return fk_call(GH_CU_FuncSetAttribute, 1, fk_on_function, hfunc, set_attribute, &args);
}

typedef struct {
    size_t index;
    size_t *offset, *size;
} fk_param_args;

static CUresult
get_param_info(fk_target *target, void *args)
{
    const fk_function *f = target->found;
    fk_param_args *a = args;

    if (a->index >= f->nparams) {
        return CUDA_ERROR_INVALID_VALUE; /* past the last: how callers count them */
    }
    if (a->offset != NULL) {
        *a->offset = f->params[a->index].offset;
    }
    if (a->size != NULL) {
        *a->size = f->params[a->index].size;
    }
    return CUDA_SUCCESS;
}

CUresult
fk_FuncGetParamInfo(CUfunction func, size_t paramIndex, size_t *paramOffset, size_t *paramSize)
{
    fk_param_args args = {paramIndex, paramOffset, paramSize};

    return fk_call(GH_CU_FuncGetParamInfo, 1, fk_on_function, func, get_param_info, &args);
}

CUresult
fk_OccupancyMaxActiveBlocksPerMultiprocessor(int *numBlocks, CUfunction func, int blockSize,
                                             size_t dynamicSMemSize)
{
    (void)numBlocks, (void)func, (void)blockSize, (void)dynamicSMemSize;
    return fk_call(GH_CU_OccupancyMaxActiveBlocksPerMultiprocessor, 1, NULL, NULL, fk_not_supported,
                   NULL);
}

CUresult
fk_OccupancyMaxPotentialBlockSize(int *minGridSize, int *blockSize, CUfunction func,
                                  CUoccupancyB2DSize blockSizeToDynamicSMemSize,
                                  size_t dynamicSMemSize, int blockSizeLimit)
{
    (void)minGridSize, (void)blockSize, (void)func, (void)blockSizeToDynamicSMemSize;
    (void)dynamicSMemSize, (void)blockSizeLimit;
    return fk_call(GH_CU_OccupancyMaxPotentialBlockSize, 1, NULL, NULL, fk_not_supported, NULL);
}

CUresult
fk_OccupancyMaxActiveClusters(int *numClusters, CUfunction func, const CUlaunchConfig *config)
{
    (void)numClusters, (void)func, (void)config;
    return fk_call(GH_CU_OccupancyMaxActiveClusters, 1, NULL, NULL, fk_not_supported, NULL);
}

CUresult
fk_LinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
              CUlinkState *stateOut)
{
    (void)numOptions, (void)options, (void)optionValues;
    if (stateOut != NULL) {
        *stateOut = NULL;
    }
    return fk_call(GH_CU_LinkCreate, 1, NULL, NULL, fk_not_supported, NULL);
}

CUresult
fk_LinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size, const char *name,
               unsigned int numOptions, CUjit_option *options, void **optionValues)
{
    (void)state, (void)type, (void)data, (void)size, (void)name, (void)numOptions, (void)options;
    (void)optionValues;
    return fk_call(GH_CU_LinkAddData, 1, NULL, NULL, fk_not_supported, NULL);
}

CUresult
fk_LinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
    (void)state, (void)cubinOut, (void)sizeOut;
    return fk_call(GH_CU_LinkComplete, 1, NULL, NULL, fk_not_supported, NULL);
}

CUresult
fk_LinkDestroy(CUlinkState state)
{
    (void)state;
    return fk_call(GH_CU_LinkDestroy, 1, NULL, NULL, fk_not_supported, NULL);
}
