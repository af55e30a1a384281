/* fakenccl's arithmetic: element types, the reductions as NCCL computes them (integers wrap
 * in their width, floating point goes through double and is rounded once to the type), and a
 * whole collective computed from every rank's input on the host.
 */
#include "fn_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t
fn_type_size(int dtype)
{
    static const size_t sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2};
    return dtype >= 0 && dtype <= GH_ncclBfloat16 ? sizes[dtype] : 0;
}

static double
half_to_double(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(m + 1024, e - 25);
    return (h & 0x8000) ? -v : v;
}

static uint16_t
double_to_half(double d)
{
    float f = (float)d;
    uint32_t x;
    uint16_t sign;
    int e;
    memcpy(&x, &f, 4);
    sign = (uint16_t)((x >> 16) & 0x8000);
    if (isnan(f)) {
        return sign | 0x7e00;
    }
    e = (int)((x >> 23) & 255) - 127 + 15;
    if (e >= 31) {
        return sign | 0x7c00;
    }
    if (e <= 0) { /* subnormal: round to nearest */
        return sign | (uint16_t)lrint(ldexp(fabs((double)f), 24));
    }
    {
        uint32_t mant = x & 0x7fffff, half = mant >> 13, rest = mant & 0x1fff;
        uint16_t out = (uint16_t)(sign | (e << 10) | half);
        if (rest > 0x1000 || (rest == 0x1000 && (half & 1))) {
            out++;
        }
        return out;
    }
}

/* A floating-point element as a double. */
static double
load(const unsigned char *p, int dtype)
{
    switch (dtype) {
        case GH_ncclFloat16: {
            uint16_t h;
            memcpy(&h, p, 2);
            return half_to_double(h);
        }
        case GH_ncclFloat32: {
            float f;
            memcpy(&f, p, 4);
            return f;
        }
        case GH_ncclFloat64: {
            double v;
            memcpy(&v, p, 8);
            return v;
        }
        case GH_ncclBfloat16: {
            uint16_t h;
            uint32_t x;
            float f;
            memcpy(&h, p, 2);
            x = (uint32_t)h << 16;
            memcpy(&f, &x, 4);
            return f;
        }
        default:
            return 0;
    }
}

static void
store(unsigned char *p, int dtype, double v)
{
    switch (dtype) {
        case GH_ncclFloat16: {
            uint16_t h = double_to_half(v);
            memcpy(p, &h, 2);
            break;
        }
        case GH_ncclFloat32: {
            float f = (float)v;
            memcpy(p, &f, 4);
            break;
        }
        case GH_ncclFloat64:
            memcpy(p, &v, 8);
            break;
        case GH_ncclBfloat16: {
            float f = (float)v;
            uint32_t x;
            uint16_t h;
            memcpy(&x, &f, 4);
            x += 0x7fff + ((x >> 16) & 1); /* round to nearest even */
            h = (uint16_t)(x >> 16);
            memcpy(p, &h, 2);
            break;
        }
        default:
            break;
    }
}

static int
is_signed(int dtype)
{
    return dtype == GH_ncclInt8 || dtype == GH_ncclInt32 || dtype == GH_ncclInt64;
}

/* An integer element as 64 bits (sign-extended for the signed types). */
static uint64_t
load_int(const unsigned char *p, int dtype)
{
    switch (dtype) {
        case GH_ncclInt8:
            return (uint64_t)(int64_t)(int8_t)p[0];
        case GH_ncclUint8:
            return p[0];
        case GH_ncclInt32: {
            int32_t v;
            memcpy(&v, p, 4);
            return (uint64_t)(int64_t)v;
        }
        case GH_ncclUint32: {
            uint32_t v;
            memcpy(&v, p, 4);
            return v;
        }
        default: {
            uint64_t v;
            memcpy(&v, p, 8);
            return v;
        }
    }
}

static void
store_int(unsigned char *p, int dtype, uint64_t v)
{
    memcpy(p, &v, fn_type_size(dtype)); /* little-endian: the low bytes, wrapping as NCCL's do */
}

/* acc = acc (op) x, element by element. */
static void
combine(unsigned char *acc, const unsigned char *x, size_t count, int dtype, int op)
{
    size_t size = fn_type_size(dtype);
    for (size_t i = 0; i < count; i++) {
        unsigned char *a = acc + i * size;
        const unsigned char *b = x + i * size;
        if (dtype <= GH_ncclUint64) {
            uint64_t ua = load_int(a, dtype), ub = load_int(b, dtype);
            int a_less = is_signed(dtype) ? (int64_t)ua < (int64_t)ub : ua < ub;
            uint64_t r = op == GH_ncclProd  ? ua * ub
                         : op == GH_ncclMax ? (a_less ? ub : ua)
                         : op == GH_ncclMin ? (a_less ? ua : ub)
                                            : ua + ub;
            store_int(a, dtype, r);
            continue;
        }
        {
            double va = load(a, dtype), vb = load(b, dtype);
            store(a, dtype,
                  op == GH_ncclProd  ? va * vb
                  : op == GH_ncclMax ? (va > vb ? va : vb)
                  : op == GH_ncclMin ? (va < vb ? va : vb)
                                     : va + vb);
        }
    }
}

static void
divide(unsigned char *acc, size_t count, int dtype, int n)
{
    size_t size = fn_type_size(dtype);
    for (size_t i = 0; i < count; i++) {
        unsigned char *a = acc + i * size;
        if (is_signed(dtype)) {
            store_int(a, dtype, (uint64_t)((int64_t)load_int(a, dtype) / n));
        }
        else if (dtype <= GH_ncclUint64) {
            store_int(a, dtype, load_int(a, dtype) / (uint64_t)n);
        }
        else {
            store(a, dtype, load(a, dtype) / n);
        }
    }
}

size_t
fn_in_bytes(int kind, size_t count, int dtype, int n, int r, int root)
{
    size_t bytes = count * fn_type_size(dtype);
    switch (kind) {
        case GH_NCCL_ReduceScatter:
            return bytes * (size_t)n;
        case GH_NCCL_Broadcast:
            return r == root ? bytes : 0;
        default:
            return bytes;
    }
}

size_t
fn_out_bytes(int kind, size_t count, int dtype, int n, int r, int root)
{
    size_t bytes = count * fn_type_size(dtype);
    switch (kind) {
        case GH_NCCL_AllGather:
            return bytes * (size_t)n;
        case GH_NCCL_Reduce:
            return r == root ? bytes : 0;
        default:
            return bytes;
    }
}

int
fn_compute(int kind, size_t count, int dtype, int op, int root, int n,
           const unsigned char *const *in, unsigned char *const *out)
{
    size_t size = fn_type_size(dtype), bytes = count * size;
    size_t in_bytes = fn_in_bytes(kind, count, dtype, n, root, root);
    unsigned char *acc;
    switch (kind) {
        case GH_NCCL_Broadcast:
            for (int r = 0; r < n; r++) {
                memmove(out[r], in[root], bytes); /* the root's may be in place */
            }
            return 0;
        case GH_NCCL_AllGather:
            for (int r = 0; r < n; r++) {
                for (int k = 0; k < n; k++) {
                    memcpy(out[r] + (size_t)k * bytes, in[k], bytes);
                }
            }
            return 0;
        default:
            break;
    }
    if ((acc = malloc(in_bytes + 1)) == NULL) {
        return -1;
    }
    memcpy(acc, in[0], in_bytes);
    for (int r = 1; r < n; r++) {
        combine(acc, in[r], in_bytes / size, dtype, op);
    }
    if (op == GH_ncclAvg) {
        divide(acc, in_bytes / size, dtype, n);
    }
    for (int r = 0; r < n; r++) {
        if (kind == GH_NCCL_AllReduce || (kind == GH_NCCL_Reduce && r == root)) {
            memcpy(out[r], acc, bytes);
        }
        else if (kind == GH_NCCL_ReduceScatter) {
            memcpy(out[r], acc + (size_t)r * bytes, bytes);
        }
    }
    free(acc);
    return 0;
}
