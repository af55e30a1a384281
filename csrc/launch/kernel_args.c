/* Kernel arguments: the launch configuration (grid, block, shared memory, clusters)
 * checked against the device's and the kernel's limits, and the arguments checked against
 * the kernel's real parameters and packed into one buffer: a mismatch is a TypeError
 * naming the kernel and the parameter.  Used by launches (kernel.c) and graph kernel nodes
 * (graph.c).
 */

#include "launch_internal.h"
#include "arrays/arrays.h"

#define NO_IMPORT_ARRAY
#define PY_ARRAY_UNIQUE_SYMBOL gh_ARRAY_API
#include <numpy/arrayobject.h>

#include <limits.h>
#include <math.h>
#include <string.h>

/* A DeviceArray's element: NumPy's kind letter and item size. */
#define GH_ARRAY_KIND(a)     (((PyArray_Descr *)(a)->dtype)->kind)
#define GH_ARRAY_ITEMSIZE(a) PyDataType_ELSIZE((PyArray_Descr *)(a)->dtype)

/* ---- launch configuration ---- */

/* Read a grid/block/cluster argument: an int, or a tuple or list of 1 to 3 ints. */
static int
parse_dims(PyObject *obj, unsigned int out[3], const char *what)
{
    PyObject *const *items = &obj;
    Py_ssize_t n = 1;
    out[0] = out[1] = out[2] = 1;
    if (PyTuple_Check(obj) || PyList_Check(obj)) {
        n = PySequence_Fast_GET_SIZE(obj);
        items = PySequence_Fast_ITEMS(obj);
        if (n < 1 || n > 3) {
            PyErr_Format(PyExc_ValueError, "%s must have 1 to 3 dimensions, not %zd", what, n);
            return -1;
        }
    }
    else if (!PyIndex_Check(obj)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int or a tuple of 1 to 3 ints, not %.100s",
                     what, Py_TYPE(obj)->tp_name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v;
        if (!PyIndex_Check(items[i])) {
            PyErr_Format(PyExc_TypeError, "%s dimensions must be ints, not %.100s", what,
                         Py_TYPE(items[i])->tp_name);
            return -1;
        }
        v = PyLong_AsLongLong(items[i]);
        if (v == -1 && PyErr_Occurred()) {
            if (!PyErr_ExceptionMatches(PyExc_OverflowError)) {
                return -1;
            }
            PyErr_Clear();
            v = LLONG_MAX;
        }
        if (v < 1 || v > UINT_MAX) {
            PyErr_Format(PyExc_ValueError, "%s dimensions must be between 1 and %u, got %R", what,
                         UINT_MAX, obj);
            return -1;
        }
        out[i] = (unsigned int)v;
    }
    return 0;
}

static int
raise_dim_limit(gh_kernel *k, const char *what, const unsigned int *d, const unsigned int *lim)
{
    PyErr_Format(PyExc_ValueError,
                 "%s (%u, %u, %u) for kernel %R is past the device's limits: %s at most "
                 "(%u, %u, %u)",
                 what, d[0], d[1], d[2], k->name, what, lim[0], lim[1], lim[2]);
    return -1;
}

/* Check dims against the device's and the kernel's limits: ValueError quoting them. */
int
gh_kernel_check_dims(gh_kernel *k, const launch_dims *d)
{
    unsigned long long threads = (unsigned long long)d->block[0] * d->block[1] * d->block[2];
    for (int i = 0; i < 3; i++) {
        if (d->block[i] > k->max_block[i]) {
            return raise_dim_limit(k, "block", d->block, k->max_block);
        }
        if (d->grid[i] > k->max_grid[i]) {
            return raise_dim_limit(k, "grid", d->grid, k->max_grid);
        }
    }
    if (threads > (unsigned long long)k->max_threads) {
        PyErr_Format(PyExc_ValueError,
                     "block (%u, %u, %u) has %llu threads; kernel %R allows at most %d per block",
                     d->block[0], d->block[1], d->block[2], threads, k->name, k->max_threads);
        return -1;
    }
    if (d->shared > (unsigned int)k->max_dyn_shared) {
        PyErr_Format(PyExc_ValueError,
                     "%u bytes of dynamic shared memory is past kernel %R's limit of %d bytes "
                     "(raise it with kernel.max_dynamic_shared_size_bytes, up to %d)",
                     d->shared, k->name, k->max_dyn_shared, k->optin_shared - k->static_shared);
        return -1;
    }
    if (d->cluster[0] != 0) {
        if (k->cc_major < 9) {
            PyErr_Format(PyExc_ValueError,
                         "thread-block clusters need compute capability 9.0 or newer; device %d "
                         "is %d.x",
                         k->module->context->device->id, k->cc_major);
            return -1;
        }
        for (int i = 0; i < 3; i++) {
            if (d->grid[i] % d->cluster[i] != 0) {
                PyErr_Format(PyExc_ValueError,
                             "grid (%u, %u, %u) is not a whole number of clusters (%u, %u, %u)",
                             d->grid[0], d->grid[1], d->grid[2], d->cluster[0], d->cluster[1],
                             d->cluster[2]);
                return -1;
            }
        }
    }
    return 0;
}

static int
parse_shared(PyObject *obj, unsigned int *out)
{
    long long v;
    if (obj == NULL || obj == Py_None) {
        *out = 0;
        return 0;
    }
    v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    if (v < 0 || v > UINT_MAX) {
        PyErr_Format(PyExc_ValueError, "shared memory size must be 0 to %u bytes, not %lld",
                     UINT_MAX, v);
        return -1;
    }
    *out = (unsigned int)v;
    return 0;
}

int
gh_launch_dims_parse(launch_dims *d, PyObject *grid, PyObject *block, PyObject *stream,
                     PyObject *shared, int cooperative, PyObject *cluster)
{
    memset(d, 0, sizeof(*d));
    d->cooperative = cooperative;
    d->stream = (stream == Py_None) ? NULL : stream;
    if (parse_dims(grid, d->grid, "grid") < 0 || parse_dims(block, d->block, "block") < 0 ||
        parse_shared(shared, &d->shared) < 0) {
        return -1;
    }
    if (cluster != NULL && cluster != Py_None && parse_dims(cluster, d->cluster, "cluster") < 0) {
        return -1;
    }
    return 0;
}

/* Fill and check `d` from the launch options; the stream is borrowed. */
int
gh_kernel_make_dims(gh_kernel *k, launch_dims *d, PyObject *grid, PyObject *block, PyObject *stream,
                    PyObject *shared, int cooperative, PyObject *cluster)
{
    if (gh_launch_dims_parse(d, grid, block, stream, shared, cooperative, cluster) < 0) {
        return -1;
    }
    return gh_kernel_check_dims(k, d);
}

/* ---- arguments ---- */

/* TypeError (or `exc`) "<kernel>(): parameter i (<its type>) <what> <arg's type>"; -1. */
static int
arg_error(gh_kernel *k, Py_ssize_t i, PyObject *exc, const char *what, PyObject *arg)
{
    PyObject *desc = gh_param_describe(k, i, NULL);
    if (desc != NULL) {
        PyErr_Format(exc, "%U(): parameter %zd (%U) %s %.100s", k->name, i, desc, what,
                     Py_TYPE(arg)->tp_name);
        Py_DECREF(desc);
    }
    return -1;
}

static int
pack_pointer(gh_kernel *k, Py_ssize_t i, PyObject *arg, CUdeviceptr ptr, char *dst)
{
    const gh_param *p = &k->params[i];
    if (p->size != sizeof(CUdeviceptr) || p->kind == 'f' || p->kind == 's' ||
        (p->ctype != 0 && p->ctype != 'p' && p->elem != GH_ELEM_ADDRESS)) {
        return arg_error(k, i, PyExc_TypeError, "cannot take a device pointer from", arg);
    }
    memcpy(dst, &ptr, sizeof(ptr));
    return 0;
}

/* An array whose element (NumPy kind and item size) a typed pointer parameter may refuse. */
static int
check_elem(gh_kernel *k, Py_ssize_t i, PyObject *arg, PyArray_Descr *descr)
{
    const gh_param *p = &k->params[i];
    if (p->ctype != 'p' || gh_param_takes_elem(p, descr->kind, PyDataType_ELSIZE(descr))) {
        return 0;
    }
    return gh_param_raise_elem(k, i, arg, descr->kind, PyDataType_ELSIZE(descr), (PyObject *)descr);
}

/* A Python int into an integer parameter of its width: in its C type's range where that is
   known, else in either the signed or the unsigned one; out of range is an OverflowError. */
static int
pack_int(gh_kernel *k, Py_ssize_t i, PyObject *arg, char *dst)
{
    const gh_param *p = &k->params[i];
    int overflow = 0, bits = (int)p->size * 8;
    long long v;
    unsigned long long u;
    PyObject *desc;

    if (p->size != 1 && p->size != 2 && p->size != 4 && p->size != 8) {
        return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
    v = PyLong_AsLongLongAndOverflow(arg, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        return -1;
    }
    u = (unsigned long long)v;
    if (p->ctype == 'b') {
        u = (v != 0 || overflow); /* C++'s bool of an integer */
        overflow = 0;
    }
    else if (overflow > 0 && p->size == 8 && p->ctype != 'i') {
        u = PyLong_AsUnsignedLongLong(arg);
        overflow = u == (unsigned long long)-1 && PyErr_Occurred();
        PyErr_Clear();
    }
    else if (!overflow) {
        int is_unsigned = p->ctype == 'u' || p->ctype == 'p';
        long long lo = is_unsigned ? 0 : bits == 64 ? LLONG_MIN : -(1LL << (bits - 1));
        long long hi = bits == 64        ? LLONG_MAX
                       : p->ctype == 'i' ? (1LL << (bits - 1)) - 1
                                         : (1LL << bits) - 1;
        overflow = v < lo || v > hi;
    }
    if (overflow) {
        if ((desc = gh_param_describe(k, i, "integer")) != NULL) {
            PyErr_Format(PyExc_OverflowError, "%U(): parameter %zd (%U) cannot hold %R", k->name, i,
                         desc, arg);
            Py_DECREF(desc);
        }
        return -1;
    }
    for (uint32_t b = 0; b < p->size; b++) {
        dst[b] = (char)(u >> (8 * b)); /* little-endian, as the device reads it */
    }
    return 0;
}

/* A Python float (or int, for a float parameter) at the parameter's width. */
static int
pack_double(gh_kernel *k, Py_ssize_t i, PyObject *arg, double x, char *dst)
{
    const gh_param *p = &k->params[i];
    PyObject *desc;
    float f;
    if (p->kind == 'i' || p->kind == 's') {
        return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
    switch (p->size) {
        case 8:
            memcpy(dst, &x, 8);
            return 0;
        case 4:
            f = (float)x;
            if (isinf(f) && !isinf(x)) {
                if ((desc = gh_param_describe(k, i, "float")) != NULL) {
                    PyErr_Format(PyExc_OverflowError, "%U(): parameter %zd (%U) cannot hold %R",
                                 k->name, i, desc, arg);
                    Py_DECREF(desc);
                }
                return -1;
            }
            memcpy(dst, &f, 4);
            return 0;
        case 2:
            return PyFloat_Pack2(x, dst, 1);
        default:
            return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
}

static int
pack_complex(gh_kernel *k, Py_ssize_t i, PyObject *arg, char *dst)
{
    const gh_param *p = &k->params[i];
    Py_complex c = PyComplex_AsCComplex(arg);
    if (PyErr_Occurred()) {
        return -1;
    }
    if (p->kind == 'i' || p->kind == 'f' || (p->size != 8 && p->size != 16)) {
        return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
    if (p->size == 16) {
        memcpy(dst, &c.real, 8);
        memcpy(dst + 8, &c.imag, 8);
    }
    else {
        float parts[2] = {(float)c.real, (float)c.imag};
        memcpy(dst, parts, 8);
    }
    return 0;
}

/* A NumPy scalar for a parameter whose C type is known: converted by value as a Python
   number of its kind would be (an integer to an integer or pointer parameter, range
   checked; a float to a float; a bool to either), never reinterpreted. */
static int
pack_numpy_value(gh_kernel *k, Py_ssize_t i, PyObject *arg, char dk, char *dst)
{
    const gh_param *p = &k->params[i];
    PyObject *v = NULL;
    int r;
    if (p->ctype == 'f' && dk == 'f') {
        double x = PyFloat_AsDouble(arg);
        return (x == -1.0 && PyErr_Occurred()) ? -1 : pack_double(k, i, arg, x, dst);
    }
    if (p->ctype != 'f' && dk == 'b' && p->ctype != 'p') {
        r = PyObject_IsTrue(arg);
        v = r < 0 ? NULL : Py_NewRef(r ? Py_True : Py_False);
    }
    else if (p->ctype != 'f' && (dk == 'i' || dk == 'u')) {
        v = PyNumber_Index(arg);
    }
    else {
        return arg_error(k, i, PyExc_TypeError, "cannot take a", arg);
    }
    if (v == NULL) {
        return -1;
    }
    r = pack_int(k, i, v, dst);
    Py_DECREF(v);
    return r;
}

/* A NumPy scalar or a bytes-like object: its bytes, which must be exactly the parameter's
   size; a NumPy float cannot go to an integer parameter nor the other way round.  Where
   the parameter's C type is known a NumPy scalar goes by value (pack_numpy_value). */
static int
pack_bytes(gh_kernel *k, Py_ssize_t i, PyObject *arg, char *dst)
{
    const gh_param *p = &k->params[i];
    Py_buffer view;
    if (PyArray_IsScalar(arg, Generic)) {
        PyArray_Descr *descr = PyArray_DescrFromScalar(arg);
        char dk = descr ? descr->kind : 0;
        Py_XDECREF(descr);
        if (p->ctype != 0) {
            return pack_numpy_value(k, i, arg, dk, dst);
        }
        if ((p->kind == 'i' && dk != 'i' && dk != 'u' && dk != 'b') ||
            (p->kind == 'f' && dk != 'f')) {
            return arg_error(k, i, PyExc_TypeError, "cannot take a", arg);
        }
    }
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) {
        PyErr_Clear();
        return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
    if ((size_t)view.len != p->size) {
        PyErr_Format(PyExc_TypeError, "%U(): parameter %zd is %u bytes; got %zd bytes of %.100s",
                     k->name, i, p->size, view.len, Py_TYPE(arg)->tp_name);
        PyBuffer_Release(&view);
        return -1;
    }
    memcpy(dst, view.buf, p->size);
    PyBuffer_Release(&view);
    return 0;
}

/* A pointer argument in memory of device `ordinal` (-1: ask the driver) for kernel k,
   whose device may differ: another device's memory is reached through peer access, which
   is turned on here (once on, the driver answers at once); where the two devices have no
   peer path this is a ValueError, not the illegal-address fault that would leave the
   process unable to use the GPU.  Managed and host memory reach every device, and memory
   the driver cannot place (freed, not its own) is not judged here. */
static int
reach_arg(gh_state *st, gh_kernel *k, Py_ssize_t i, CUdeviceptr ptr, int ordinal)
{
    gh_context *ctx = k->module->context;
    gh_device *home = ctx->device, *dev;
    unsigned long long managed = 1;
    unsigned int memtype = 0;
    int pushed, can = 0;

    if (ordinal == home->id || ptr == 0 ||
        (ordinal < 0 && st->devices != NULL && PyList_GET_SIZE(st->devices) < 2)) {
        return 0; /* one device: all device memory is its */
    }
    if (gh_context_enter(ctx, &pushed) < 0) {
        return -1;
    }
    if (ordinal < 0 &&
        gh_cu.PointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr) != 0) {
        ordinal = home->id;
    }
    if (ordinal != home->id &&
        (gh_cu.PointerGetAttribute(&managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr) != 0 ||
         gh_cu.PointerGetAttribute(&memtype, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr) != 0 ||
         managed != 0 || memtype != CU_MEMORYTYPE_DEVICE)) {
        ordinal = home->id;
    }
    if (gh_context_leave(ctx, pushed) < 0) {
        return -1;
    }
    if (ordinal == home->id) {
        return 0;
    }
    if ((dev = gh_device_get(st, ordinal)) == NULL ||
        gh_device_can_access_peer(home, dev, &can) < 0) {
        return -1;
    }
    if (!can) {
        PyErr_Format(PyExc_ValueError,
                     "%U(): parameter %zd is memory of device %d, which device %d cannot "
                     "reach (Device.can_access_peer() is False); copy it to device %d first",
                     k->name, i, ordinal, home->id, home->id);
        return -1;
    }
    return gh_context_peer_access(ctx, dev, 1);
}

/* Another library's device array (DLPack's C exchange API, CuPy, the CUDA array interface,
   __dlpack__): its address, with the launch's stream ordered after the exporter's (`u` is the
   launch's; NULL where the launch has no stream, as a graph's kernel node). */
static int
pack_foreign(gh_state *st, gh_kernel *k, Py_ssize_t i, PyObject *arg, gh_foreign_use *u, char *dst)
{
    gh_foreign f;
    int r, ordered = u->consumer != GH_NO_STREAM;
    char kind = 0;
    Py_ssize_t itemsize = 0;
    u->index = i;
    r = gh_foreign_read(u, arg, &f);
    if (r <= 0) {
        return r < 0 ? -1 : arg_error(k, i, PyExc_TypeError, "cannot take", arg);
    }
    r = pack_pointer(k, i, arg, f.ptr, dst);
    if (r == 0 && k->params[i].ctype == 'p' && k->params[i].elem != GH_ELEM_ANY) {
        r = gh_foreign_elem(u, arg, &f, &kind, &itemsize);
        if (r == 0 && !gh_param_takes_elem(&k->params[i], kind, itemsize)) {
            r = gh_param_raise_elem(k, i, arg, kind, itemsize, f.descr);
        }
    }
    r = (r < 0 || reach_arg(st, k, i, f.ptr, f.device) < 0 ||
         (ordered && gh_foreign_order(u, &f) < 0))
            ? -1
            : 0;
    gh_foreign_release(&f);
    return r;
}

static int
pack_arg(gh_state *st, gh_kernel *k, Py_ssize_t i, PyObject *arg, gh_foreign_use *u, char *dst)
{
    const gh_param *p = &k->params[i];
    PyTypeObject *tp = Py_TYPE(arg);

    if (tp == st->DeviceArrayType || PyObject_TypeCheck(arg, st->DeviceArrayType)) {
        gh_devicearray *a = (gh_devicearray *)arg;
        if ((a->generation != a->context->generation || a->context->handle == NULL) &&
            gh_context_check_alive(a->context, a->generation, GH_CU_LaunchKernel) < 0) {
            return -1;
        }
        if (pack_pointer(k, i, arg, a->ptr, dst) < 0 ||
            check_elem(k, i, arg, (PyArray_Descr *)a->dtype) < 0) {
            return -1;
        }
        if (a->context != k->module->context &&
            reach_arg(st, k, i, a->ptr, a->context->device->id) < 0) {
            return -1;
        }
        return 0;
    }
    if (PyLong_CheckExact(arg) || (PyLong_Check(arg) && !PyBool_Check(arg))) {
        if (p->kind == 'f') {
            double x = PyLong_AsDouble(arg);
            return (x == -1.0 && PyErr_Occurred()) ? -1 : pack_double(k, i, arg, x, dst);
        }
        if (p->kind == 's') {
            return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
        }
        return pack_int(k, i, arg, dst);
    }
    if (PyFloat_CheckExact(arg)) {
        if (p->kind == 'i' || p->kind == 's') {
            return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
        }
        return pack_double(k, i, arg, PyFloat_AS_DOUBLE(arg), dst);
    }
    if (PyBool_Check(arg)) {
        if (p->kind == 's' || p->ctype == 'p') {
            return arg_error(k, i, PyExc_TypeError, "cannot take", arg);
        }
        return p->kind == 'f' ? pack_double(k, i, arg, arg == Py_True, dst)
                              : pack_int(k, i, arg, dst);
    }
    if (arg == Py_None) {
        return pack_pointer(k, i, arg, 0, dst);
    }
    if (PyArray_Check(arg)) {
        if (!PyArray_CheckExact(arg) && PyObject_HasAttrString(arg, "__cuda_array_interface__")) {
            return pack_foreign(st, k, i, arg, u, dst); /* mapped or managed memory */
        }
        return arg_error(k, i, PyExc_TypeError,
                         "cannot take a host array; copy it to the device (gpuhost.to_device) "
                         "and pass the device array, not a",
                         arg);
    }
    if (PyArray_IsScalar(arg, Generic) || PyBytes_Check(arg) || PyByteArray_Check(arg) ||
        PyMemoryView_Check(arg)) {
        return pack_bytes(k, i, arg, dst);
    }
    if (PyFloat_Check(arg)) {
        return pack_double(k, i, arg, PyFloat_AsDouble(arg), dst);
    }
    if (PyComplex_Check(arg)) {
        return pack_complex(k, i, arg, dst);
    }
    return pack_foreign(st, k, i, arg, u, dst);
}

/* The common arguments packed without pack_arg's detours: a DeviceArray (exactly) of the
   kernel's live context into a pointer parameter, an int (exactly) into a 4- or 8-byte
   integer parameter that holds it, a float (exactly) into a float or double parameter that
   holds it.  1 if packed; 0 leaves the argument to pack_arg, which also makes every error,
   so what is accepted and refused is pack_arg's. */
static inline int
pack_fast(gh_state *st, gh_kernel *k, const gh_param *p, PyObject *arg, char *dst)
{
    PyTypeObject *tp = Py_TYPE(arg);
    if (tp == st->DeviceArrayType) {
        gh_devicearray *a = (gh_devicearray *)arg;
        if (p->kind != 'i' || p->size != sizeof(CUdeviceptr) || a->context != k->module->context ||
            a->generation != a->context->generation || a->context->handle == NULL) {
            return 0;
        }
        if (p->ctype == 'p' ? p->elem != GH_ELEM_ANY &&
                                  !gh_param_takes_elem(p, GH_ARRAY_KIND(a), GH_ARRAY_ITEMSIZE(a))
                            : p->ctype != 0 && p->elem != GH_ELEM_ADDRESS) {
            return 0; /* not an array of its element, or not a pointer: pack_arg says so */
        }
        memcpy(dst, &a->ptr, sizeof(CUdeviceptr));
        return 1;
    }
    if (tp == &PyLong_Type && p->kind == 'i' && (p->size == 8 || p->size == 4)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(arg, &overflow);
        if (overflow || (p->size == 4 && (v < INT32_MIN || v > (long long)UINT32_MAX))) {
            return 0;
        }
        if (p->ctype != 0 &&
            ((v < 0 && p->ctype != 'i') || (p->ctype == 'i' && p->size == 4 && v > INT32_MAX))) {
            return 0; /* out of a known C type's range: pack_int says so */
        }
        if (p->size == 8) {
            memcpy(dst, &v, 8);
        }
        else {
            uint32_t u = (uint32_t)v; /* little-endian low bytes, as pack_int writes them */
            memcpy(dst, &u, 4);
        }
        return 1;
    }
    if (tp == &PyFloat_Type && p->kind == 'f' && (p->size == 8 || p->size == 4)) {
        double x = PyFloat_AS_DOUBLE(arg);
        float f = (float)x;
        if (p->size == 8) {
            memcpy(dst, &x, 8);
            return 1;
        }
        if (isinf(f) && !isinf(x)) {
            return 0;
        }
        memcpy(dst, &f, 4);
        return 1;
    }
    return 0;
}

int
gh_kernel_pack(gh_state *st, gh_kernel *k, PyObject *const *args, Py_ssize_t nargs,
               const gh_stream_ref *ref, gh_argbuf *ab)
{
    gh_foreign_use u;
    int u_ready = 0;
    ab->buf = ab->small.bytes;
    ab->ptrs = ab->small_ptrs;
    if (k->nparams > GH_SMALL_ARGS || k->argsize > GH_SMALL_ARGBUF) {
        ab->buf = PyMem_Malloc(k->argsize + (size_t)k->nparams * sizeof(void *) + 16);
        if (ab->buf == NULL) {
            ab->buf = ab->small.bytes;
            PyErr_NoMemory();
            return -1;
        }
        ab->ptrs = (void **)(ab->buf + ((k->argsize + 15) & ~(size_t)15));
    }
    for (Py_ssize_t i = 0; i < nargs; i++) {
        ab->ptrs[i] = ab->buf + k->params[i].offset;
        if (pack_fast(st, k, &k->params[i], args[i], ab->ptrs[i])) {
            continue;
        }
        if (!u_ready) {
            gh_foreign_use_init(&u, st, ref && ref->context ? ref->context : k->module->context,
                                ref ? ref->handle : GH_NO_STREAM, GH_FOREIGN_POINTER);
            u.who = k->name;
            u.what = "parameter";
            u_ready = 1;
        }
        /* a type learnt to be another library's array: straight to its reading */
        if ((gh_foreign_known(st, Py_TYPE(args[i]))
                 ? pack_foreign(st, k, i, args[i], &u, ab->ptrs[i])
                 : pack_arg(st, k, i, args[i], &u, ab->ptrs[i])) < 0) {
            return -1;
        }
    }
    return 0;
}

void
gh_argbuf_free(gh_argbuf *ab)
{
    if (ab->buf != ab->small.bytes) {
        PyMem_Free(ab->buf);
    }
    ab->buf = ab->small.bytes;
}
