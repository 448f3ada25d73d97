/* Choosing the operation table of a device. */
#include "core/error.h"
#include "model/backend.h"

const wk_backend *wk_backend_for(wk_device dev)
{
    if (dev == WK_DEVICE_CPU) return &wk_cpu_backend;
    if (dev == WK_DEVICE_CUDA) {
        /* A direct reference (not a weak symbol): a static link must pull the CUDA table in. */
#ifdef WICK_HAVE_CUDA
        return &wk_cuda_backend;
#else
        wk_fail(WK_ERR_DEVICE, "this build of wick has no CUDA support");
        return NULL;
#endif
    }
    wk_fail(WK_ERR_INVALID, "unknown device %d", (int)dev);
    return NULL;
}
