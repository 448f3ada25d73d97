/* QTensor: a typed, shaped block of storage on a device, and its host-memory accounting. */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "quant/traits.h"
#include "tensor/cuda_hooks.h"
#include "tensor/engine_impl.h"

/* ---- host-memory accounting ---------------------------------------------------- */
static atomic_size_t wk_host_in_use;
static atomic_size_t wk_host_peak;

void *wk_host_alloc(size_t nbytes)
{
    /* 64-byte aligned so that SIMD kernels and repacked groups start on a cache line. */
    void *p = NULL;
    if (posix_memalign(&p, 64, nbytes ? nbytes : 1) != 0) return NULL;
    size_t now = atomic_fetch_add(&wk_host_in_use, nbytes) + nbytes;
    size_t peak = atomic_load(&wk_host_peak);
    while (now > peak && !atomic_compare_exchange_weak(&wk_host_peak, &peak, now)) {
    }
    return p;
}

void wk_host_free(void *p, size_t nbytes)
{
    if (!p) return;
    atomic_fetch_sub(&wk_host_in_use, nbytes);
    free(p);
}

size_t wk_host_bytes_in_use(void) { return atomic_load(&wk_host_in_use); }
size_t wk_host_bytes_peak(void) { return atomic_load(&wk_host_peak); }
void wk_host_reset_peak(void) { atomic_store(&wk_host_peak, atomic_load(&wk_host_in_use)); }

/* ---- creation -------------------------------------------------------------------- */
wk_status wk_qtensor_check_shape(wk_type t, int n_dims, const int64_t *dims, const char *what,
                                 size_t *nbytes)
{
    const wk_type_traits *tr = wk_traits(t);
    if (!tr) return wk_fail(WK_ERR_INVALID, "%s: unknown type id %d", what, (int)t);
    if (n_dims < 1 || n_dims > 4)
        return wk_fail(WK_ERR_INVALID, "%s: %d dimensions (a QTensor has 1 to 4)", what, n_dims);
    if (!dims) return wk_fail(WK_ERR_INVALID, "%s: no shape given", what);
    int64_t count = 1;
    for (int i = 0; i < n_dims; i++) {
        if (dims[i] <= 0)
            return wk_fail(WK_ERR_INVALID, "%s: dimension %d is %lld (must be positive)", what, i,
                           (long long)dims[i]);
        if (count > INT64_MAX / dims[i])
            return wk_fail(WK_ERR_INVALID, "%s: element count overflows", what);
        count *= dims[i];
    }
    int64_t row = dims[n_dims - 1];
    if (row % tr->block_size != 0)
        return wk_fail(WK_ERR_INVALID,
                       "%s: last dimension %lld is not divisible by the block size %lld of %s",
                       what, (long long)row, (long long)tr->block_size, tr->name);
    int64_t blocks = count / tr->block_size;
    if ((uint64_t)blocks > SIZE_MAX / tr->block_bytes)
        return wk_fail(WK_ERR_INVALID, "%s: byte size overflows", what);
    *nbytes = (size_t)blocks * tr->block_bytes;
    return WK_OK;
}

wk_status wk_qtensor_new(wk_type type, int n_dims, const int64_t *dims, wk_device dev,
                         wk_storage_kind kind, void *data, wk_qtensor **out)
{
    size_t nbytes = 0;
    wk_status st = wk_qtensor_check_shape(type, n_dims, dims, "qtensor", &nbytes);
    if (st) return st;
    wk_qtensor *t = calloc(1, sizeof *t);
    if (!t) return wk_fail(WK_ERR_NOMEM, "qtensor: out of memory");
    t->type = type;
    t->n_dims = n_dims;
    memcpy(t->dims, dims, (size_t)n_dims * sizeof dims[0]);
    t->nbytes = nbytes;
    t->device = dev;
    t->kind = kind;
    t->layout = WK_LAYOUT_GGUF;
    t->data = data;
    *out = t;
    return WK_OK;
}

wk_status wk_qtensor_create(wk_type type, int n_dims, const int64_t *dims, wk_qtensor **out)
{
    size_t nbytes = 0;
    wk_status st = wk_qtensor_check_shape(type, n_dims, dims, "qtensor", &nbytes);
    if (st) return st;
    void *data = wk_host_alloc(nbytes);
    if (!data) return wk_fail(WK_ERR_NOMEM, "qtensor: cannot allocate %zu bytes", nbytes);
    memset(data, 0, nbytes);
    st = wk_qtensor_new(type, n_dims, dims, WK_DEVICE_CPU, WK_STORAGE_OWNED, data, out);
    if (st) wk_host_free(data, nbytes);
    return st;
}

wk_status wk_qtensor_wrap(wk_type type, int n_dims, const int64_t *dims, void *data,
                          size_t nbytes, wk_qtensor **out)
{
    size_t want = 0;
    wk_status st = wk_qtensor_check_shape(type, n_dims, dims, "qtensor", &want);
    if (st) return st;
    if (!data) return wk_fail(WK_ERR_INVALID, "qtensor: no data to wrap");
    if (nbytes != want)
        return wk_fail(WK_ERR_INVALID, "qtensor: %zu bytes given, the %s shape needs %zu", nbytes,
                       wk_traits(type)->name, want);
    return wk_qtensor_new(type, n_dims, dims, WK_DEVICE_CPU, WK_STORAGE_BORROWED, data, out);
}

wk_status wk_qtensor_quantize(wk_type type, int n_dims, const int64_t *dims, const float *src,
                              wk_qtensor **out)
{
    if (!src) return wk_fail(WK_ERR_INVALID, "qtensor: no values to quantize");
    wk_qtensor *t = NULL;
    wk_status st = wk_qtensor_create(type, n_dims, dims, &t);
    if (st) return st;
    const wk_type_traits *tr = wk_traits(type);
    int64_t row = dims[n_dims - 1];
    int64_t rows = wk_qtensor_nelements(t) / row;
    size_t row_bytes = (size_t)(row / tr->block_size) * tr->block_bytes;
    for (int64_t r = 0; r < rows; r++)
        tr->from_f32(src + r * row, (char *)t->data + (size_t)r * row_bytes, row);
    *out = t;
    return WK_OK;
}

void wk_qtensor_free(wk_qtensor *t)
{
    if (!t) return;
    if (t->kind == WK_STORAGE_OWNED) wk_host_free(t->data, t->nbytes);
    else if (t->kind == WK_STORAGE_DEVICE) wk_cuda_buffer_free(t->data);
    free(t);
}

/* ---- accessors ------------------------------------------------------------------- */
wk_type wk_qtensor_type(const wk_qtensor *t) { return t->type; }
int wk_qtensor_n_dims(const wk_qtensor *t) { return t->n_dims; }
int64_t wk_qtensor_dim(const wk_qtensor *t, int i)
{
    return (i >= 0 && i < t->n_dims) ? t->dims[i] : 1;
}
int64_t wk_qtensor_nelements(const wk_qtensor *t)
{
    int64_t c = 1;
    for (int i = 0; i < t->n_dims; i++) c *= t->dims[i];
    return c;
}
size_t wk_qtensor_nbytes(const wk_qtensor *t) { return t->nbytes; }
wk_device wk_qtensor_device(const wk_qtensor *t) { return t->device; }
const void *wk_qtensor_data(const wk_qtensor *t)
{
    return t->device == WK_DEVICE_CPU ? t->data : NULL;
}

/* ---- conversions ----------------------------------------------------------------- */
/* Host bytes in the GGUF layout: the tensor's own, or a downloaded copy (*tmp to free). */
static wk_status wk_qtensor_host_bytes(const wk_qtensor *t, const void **bytes, void **tmp)
{
    *tmp = NULL;
    if (t->layout != WK_LAYOUT_GGUF)
        return wk_fail(WK_ERR_UNSUPPORTED,
                       "qtensor: its blocks were repacked for a matmul and cannot be read back");
    if (t->device == WK_DEVICE_CPU) {
        *bytes = t->data;
        return WK_OK;
    }
    void *h = malloc(t->nbytes ? t->nbytes : 1);
    if (!h) return wk_fail(WK_ERR_NOMEM, "qtensor: cannot allocate %zu bytes", t->nbytes);
    wk_status st = wk_cuda_copy_to_host(h, t->data, t->nbytes);
    if (st) {
        free(h);
        return st;
    }
    *bytes = h;
    *tmp = h;
    return WK_OK;
}

/* Dequantize every row into dst, with to_f32 (half = false) or to_f16 (half = true). */
static wk_status wk_qtensor_dequantize_rows(const wk_qtensor *t, void *dst, bool half)
{
    if (!dst) return wk_fail(WK_ERR_INVALID, "qtensor: no destination");
    const void *bytes = NULL;
    void *tmp = NULL;
    wk_status st = wk_qtensor_host_bytes(t, &bytes, &tmp);
    if (st) return st;
    const wk_type_traits *tr = wk_traits(t->type);
    int64_t row = t->dims[t->n_dims - 1];
    int64_t rows = wk_qtensor_nelements(t) / row;
    size_t row_bytes = (size_t)(row / tr->block_size) * tr->block_bytes;
    for (int64_t r = 0; r < rows; r++) {
        const char *src = (const char *)bytes + (size_t)r * row_bytes;
        if (half)
            tr->to_f16(src, (uint16_t *)dst + r * row, row);
        else
            tr->to_f32(src, (float *)dst + r * row, row);
    }
    free(tmp);
    return WK_OK;
}

wk_status wk_qtensor_dequantize_f32(const wk_qtensor *t, float *dst)
{
    return wk_qtensor_dequantize_rows(t, dst, false);
}

wk_status wk_qtensor_dequantize_f16(const wk_qtensor *t, uint16_t *dst)
{
    return wk_qtensor_dequantize_rows(t, dst, true);
}

wk_status wk_qtensor_to_device(const wk_qtensor *t, wk_device dev, wk_qtensor **out)
{
    if (dev != WK_DEVICE_CPU && dev != WK_DEVICE_CUDA)
        return wk_fail(WK_ERR_INVALID, "qtensor: unknown device %d", (int)dev);
    const void *bytes = NULL;
    void *tmp = NULL;
    wk_status st = wk_qtensor_host_bytes(t, &bytes, &tmp);
    if (st) return st;
    if (dev == WK_DEVICE_CPU) {
        st = wk_qtensor_create(t->type, t->n_dims, t->dims, out);
        if (!st) memcpy((*out)->data, bytes, t->nbytes);
        free(tmp);
        return st;
    }
    void *d = NULL;
    st = wk_cuda_buffer_alloc(t->nbytes, &d);
    if (!st) st = wk_cuda_copy_to_device(d, bytes, t->nbytes);
    if (!st) st = wk_qtensor_new(t->type, t->n_dims, t->dims, WK_DEVICE_CUDA, WK_STORAGE_DEVICE, d, out);
    if (st && d) wk_cuda_buffer_free(d);
    free(tmp);
    return st;
}
