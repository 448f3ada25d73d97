/* How long one dependent launch takes on this GPU: the floor under wick's decode step,
 * which is a chain of about 120 small dependent kernels in a CUDA graph.
 *
 *   cuda_chain_bench [--kernels 120] [--blocks 60] [--threads 160] [--n 576]
 *
 * A graph of --kernels launches, each reading what the one before wrote, is replayed and
 * timed with CUDA events, with and without programmatic dependent launch (the attribute
 * wick's kernels are launched with), for three bodies:
 *   empty   the dependency wait and nothing else;
 *   one     the wait, one load of a value the kernel before wrote, one store;
 *   chain4  as one, with four loads each waiting for the one before (a load's latency);
 *   reduce  the wait, every block reads the n values the kernel before wrote, sums them
 *           over the block (two barriers) and writes its share of n values: the shape of
 *           a decode step's launches without their products;
 *   twice   reduce, whose blocks also read the n values a second time after the sum (as
 *           the RMSNorm preparation's two passes do).
 * Block 0 of each kernel also records the global timer at its start, after its wait and at
 * its end, so the time from one kernel's end to the next one's wait returning (the
 * hand-off) is printed apart from the time a kernel works after its wait. The timer's
 * resolution is measured first and printed. */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CK(call)                                                                                   \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess) {                                                                   \
            fprintf(stderr, "cuda_chain_bench: %s: %s\n", #call, cudaGetErrorString(e_));          \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

__device__ __forceinline__ uint64_t gtimer()
{
    uint64_t t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

/* The smallest step of the global timer seen in a tight loop, and how many steps. */
__global__ void timer_kernel(uint64_t *out)
{
    uint64_t prev = gtimer(), best = ~0ull, steps = 0;
    for (int i = 0; i < 200000; i++) {
        const uint64_t t = gtimer();
        if (t != prev) {
            if (t - prev < best) best = t - prev;
            steps++;
            prev = t;
        }
    }
    out[0] = best;
    out[1] = steps;
}

enum { BODY_EMPTY, BODY_ONE, BODY_CHAIN4, BODY_REDUCE, BODY_TWICE, BODIES };

__global__ void chain_kernel(const float *in, float *out, int n, int body, uint64_t *trace)
{
    __shared__ float red[32];
    const uint64_t t0 = gtimer();
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
    const uint64_t t1 = gtimer();
    asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
    if (body == BODY_ONE || body == BODY_CHAIN4) {
        /* One load of what the previous kernel wrote, or four, each address depending on
         * the value before (0 + the values, which are 0: the same element). */
        const int i = (blockIdx.x * blockDim.x + threadIdx.x) % n;
        float v = in[i];
        if (body == BODY_CHAIN4)
            for (int r = 0; r < 3; r++) v = in[(i + (int)v) % n];
        out[i] = v;
    } else if (body != BODY_EMPTY) {
        float s = 0.f;
        for (int i = threadIdx.x; i < n; i += blockDim.x) s += in[i];
        for (int o = 16; o; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if ((threadIdx.x & 31) == 0) red[threadIdx.x >> 5] = s;
        __syncthreads();
        float tot = 0.f;
        for (int w = 0; w < (int)(blockDim.x >> 5); w++) tot += red[w];
        const int per = (n + gridDim.x - 1) / gridDim.x;
        for (int i = blockIdx.x * per + threadIdx.x; i < min(n, (int)(blockIdx.x + 1) * per); i += blockDim.x) {
            float v = in[i] + tot * 1e-9f;
            if (body == BODY_TWICE) v += in[(i + 1) % n] * 1e-9f;
            out[i] = v;
        }
        __syncthreads();
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        trace[0] = t0;
        trace[1] = t1;
        trace[2] = gtimer();
    }
}

static void launch(cudaStream_t s, bool pdl, int blocks, int threads, const float *in, float *out, int n,
                   int body, uint64_t *trace)
{
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = pdl ? 1 : 0;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(blocks);
    cfg.blockDim = dim3(threads);
    cfg.stream = s;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
    CK(cudaLaunchKernelEx(&cfg, chain_kernel, in, out, n, body, trace));
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int kernels = 120, blocks = 60, threads = 160, n = 576;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kernels") && i + 1 < argc) kernels = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--blocks") && i + 1 < argc) blocks = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--n") && i + 1 < argc) n = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: cuda_chain_bench [--kernels K] [--blocks B] [--threads T] [--n N]\n");
            return 2;
        }
    }
    if (kernels < 2 || blocks < 1 || threads < 32 || threads > 1024 || threads % 32 || n < 1) {
        fprintf(stderr, "cuda_chain_bench: bad sizes\n");
        return 2;
    }
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
        fprintf(stderr, "cuda_chain_bench: no CUDA device\n");
        return 1;
    }
    cudaStream_t s;
    CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    uint64_t *tr = NULL;
    CK(cudaMalloc(&tr, sizeof(uint64_t) * 3 * (size_t)(kernels + 1)));
    timer_kernel<<<1, 1, 0, s>>>(tr);
    uint64_t tk[2];
    CK(cudaMemcpyAsync(tk, tr, sizeof tk, cudaMemcpyDeviceToHost, s));
    CK(cudaStreamSynchronize(s));
    printf("global timer: smallest step %llu ns (%llu steps seen)\n", (unsigned long long)tk[0],
           (unsigned long long)tk[1]);
    printf("%d kernels of %d blocks x %d threads, n = %d; us per kernel (median of 9 replays of the "
           "graph), and block 0's hand-off (previous end -> wait returned) and work (wait -> end)\n",
           kernels, blocks, threads, n);
    float *buf[2];
    for (int i = 0; i < 2; i++) {
        CK(cudaMalloc(&buf[i], sizeof(float) * (size_t)n));
        CK(cudaMemset(buf[i], 0, sizeof(float) * (size_t)n));
    }
    const char *names[BODIES] = {"empty", "one", "chain4", "reduce", "twice"};
    uint64_t *host = (uint64_t *)malloc(sizeof(uint64_t) * 3 * (size_t)kernels);
    for (int body = 0; body < BODIES; body++)
        for (int pdl = 0; pdl < 2; pdl++) {
            cudaGraph_t g;
            cudaGraphExec_t ge;
            CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
            for (int k = 0; k < kernels; k++)
                launch(s, pdl, blocks, threads, buf[k & 1], buf[(k + 1) & 1], n, body, tr + 3 * k);
            CK(cudaStreamEndCapture(s, &g));
            CK(cudaGraphInstantiate(&ge, g, 0));
            cudaEvent_t a, b;
            CK(cudaEventCreate(&a));
            CK(cudaEventCreate(&b));
            double us[9];
            for (int w = 0; w < 3; w++) CK(cudaGraphLaunch(ge, s));
            for (int r = 0; r < 9; r++) {
                CK(cudaEventRecord(a, s));
                CK(cudaGraphLaunch(ge, s));
                CK(cudaEventRecord(b, s));
                CK(cudaEventSynchronize(b));
                float ms = 0.f;
                CK(cudaEventElapsedTime(&ms, a, b));
                us[r] = 1e3 * ms / kernels;
            }
            qsort(us, 9, sizeof us[0], cmp_d);
            CK(cudaMemcpy(host, tr, sizeof(uint64_t) * 3 * (size_t)kernels, cudaMemcpyDeviceToHost));
            double hand[512], work[512];
            int nh = 0;
            for (int k = 1; k < kernels && nh < 512; k++, nh++) {
                hand[nh] = (double)(int64_t)(host[3 * k + 1] - host[3 * (k - 1) + 2]) * 1e-3;
                work[nh] = (double)(int64_t)(host[3 * k + 2] - host[3 * k + 1]) * 1e-3;
            }
            qsort(hand, (size_t)nh, sizeof hand[0], cmp_d);
            qsort(work, (size_t)nh, sizeof work[0], cmp_d);
            printf("%-7s %-6s %7.2f us per kernel | block 0: hand-off %6.2f us, work %6.2f us (medians)\n",
                   names[body], pdl ? "pdl" : "plain", us[4], hand[nh / 2], work[nh / 2]);
            CK(cudaEventDestroy(a));
            CK(cudaEventDestroy(b));
            CK(cudaGraphExecDestroy(ge));
            CK(cudaGraphDestroy(g));
        }
    free(host);
    for (int i = 0; i < 2; i++) CK(cudaFree(buf[i]));
    CK(cudaFree(tr));
    CK(cudaStreamDestroy(s));
    return 0;
}
