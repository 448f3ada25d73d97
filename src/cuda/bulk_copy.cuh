/* Internal (CUDA): the copy engine (cp.async.bulk, compute capability 9.0): whole stretches
 * of bytes from global into shared memory, counted on an mbarrier, without the per-thread
 * requests (and registers) that cap the bytes a warp's own loads keep in flight. Used by the
 * many-row wgmma kernel's ring. */
#ifndef WICK_CUDA_BULK_COPY_CUH
#define WICK_CUDA_BULK_COPY_CUH

#include <stdint.h>

namespace wkb {

__device__ __forceinline__ uint32_t smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

__device__ __forceinline__ void mbar_init(uint32_t bar, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(bar), "r"(count) : "memory");
}
/* Makes the barriers' initialization visible to the copy engine: after mbar_init, before
 * the first copy that signals them. */
__device__ __forceinline__ void mbar_init_fence() { asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory"); }
__device__ __forceinline__ void mbar_expect(uint32_t bar, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(bar) : "memory");
}
/* Until the barrier's phase of this parity has completed. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
    asm volatile("{\n"
                 ".reg .pred p;\n"
                 "WAIT_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n"
                 "@!p bra WAIT_%=;\n"
                 "}" ::"r"(bar), "r"(parity) : "memory");
}
/* bytes (a multiple of 16, both addresses on 16 bytes) from src to shared address dst,
 * counted on bar as they land. */
__device__ __forceinline__ void bulk_copy(uint32_t dst, const void *src, uint32_t bytes, uint32_t bar)
{
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                 ::"r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}

} // namespace wkb

#endif
