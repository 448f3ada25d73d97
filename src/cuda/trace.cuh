/* Internal (CUDA): a timeline of the decode step's launches, for builds with
 * -DWICK_CUDA_TRACE=ON only (a measuring build; the default build compiles none of it).
 *
 * Thread 0 of block 0 of a traced kernel writes the global timer (32 ns steps on the
 * H200) at its start and at up to four marks of its work into a record of its
 * translation unit's ring; every block's thread 0 raises the record's end_max, so the
 * record also shows when the launch's last block finished (the timer only grows, so a
 * record reused by a later replay of the same graph needs no reset). The record is
 * chosen by the host at launch (a graph's replays rewrite the records of its captured
 * launches), or, for a slot < 0, claimed by block 0 (then end_max is block 0's end). The
 * host reads the rings with wk_cuda_trace_dump (trace.cu). */
#ifndef WICK_CUDA_TRACE_CUH
#define WICK_CUDA_TRACE_CUH

#include <stdint.h>

struct wk_trace_rec {
    uint32_t kind, blocks;
    unsigned long long t[5];
    unsigned long long end_max;
};
constexpr int WK_TRACE_MAX = 8192;

#ifdef WICK_CUDA_TRACE
#define WK_TRACE_RING(name)                                                                        \
    __device__ wk_trace_rec name##_recs[WK_TRACE_MAX];                                             \
    __device__ unsigned name##_n;                                                                  \
    static int name##_host_n;                                                                      \
    [[maybe_unused]] static int name##_slot() { return name##_host_n++ % WK_TRACE_MAX; }                            \
    extern "C" int name##_take(wk_trace_rec *out)                                                  \
    {                                                                                              \
        return cudaDeviceSynchronize() == cudaSuccess &&                                           \
                       cudaMemcpyFromSymbol(out, name##_recs, sizeof(wk_trace_rec) * WK_TRACE_MAX) == cudaSuccess \
                   ? WK_TRACE_MAX                                                                  \
                   : -1;                                                                           \
    }
__device__ __forceinline__ unsigned long long wk_gtimer()
{
    unsigned long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}
#define WK_TRACE_BLOCK0 (threadIdx.x == 0 && blockIdx.x == 0 && blockIdx.y == 0)
#define WK_TRACE_BEGIN(ring, slot, kind_id)                                                        \
    wk_trace_rec *wk_tr_ = NULL;                                                                   \
    if (threadIdx.x == 0) {                                                                        \
        const unsigned long long t0_ = wk_gtimer();                                                \
        int s_ = (slot);                                                                           \
        if (s_ < 0) s_ = WK_TRACE_BLOCK0 ? (int)(atomicAdd(&ring##_n, 1u) % WK_TRACE_MAX) : -1;   \
        wk_tr_ = s_ >= 0 ? &ring##_recs[s_] : NULL;                                                \
        if (WK_TRACE_BLOCK0 && wk_tr_) {                                                           \
            wk_tr_->kind = (kind_id);                                                              \
            wk_tr_->blocks = gridDim.x * gridDim.y;                                                \
            wk_tr_->t[0] = t0_;                                                                    \
        }                                                                                          \
    }
#define WK_TRACE_MARK(i)                                                                           \
    do {                                                                                           \
        if (WK_TRACE_BLOCK0 && wk_tr_) wk_tr_->t[i] = wk_gtimer();                                 \
    } while (0)
#define WK_TRACE_END()                                                                             \
    do {                                                                                           \
        if (threadIdx.x == 0 && wk_tr_) atomicMax(&wk_tr_->end_max, wk_gtimer());                  \
    } while (0)
#else
#define WK_TRACE_RING(name)
#define WK_TRACE_BEGIN(ring, slot, kind_id)
#define WK_TRACE_MARK(i) ((void)0)
#define WK_TRACE_END() ((void)0)
#endif

#endif
