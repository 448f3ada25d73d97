/* Internal: rewrite a GGUF model with its weight matrices in another type
 * (the work of `wick quantize`). */
#ifndef WICK_QUANT_QUANTIZE_FILE_H
#define WICK_QUANT_QUANTIZE_FILE_H

#include "quant/quantize_plan.h"
#include "wick/common.h"

/* Called once per tensor after it is converted (or copied): its plan and position. */
typedef void (*wk_quantize_progress_fn)(const wk_quant_tensor *t, int64_t index, int64_t count,
                                        void *user);

typedef struct wk_quantize_stats {
    int64_t n_tensors, n_quantized, n_fallback;
    int64_t count_by_type[WK_TYPE_COUNT]; /* output tensors of each type */
    uint64_t bytes_in, bytes_out;         /* tensor data */
} wk_quantize_stats;

/* Read in_path, convert every weight matrix by the request `type_name` (see
 * wk_quant_request_parse), copy all metadata (general.file_type and
 * general.quantization_version updated as llama.cpp writes them, split keys dropped),
 * and write out_path. Tensors are dequantized to f32 with their type's reference
 * dequantizer and quantized with the target's reference quantizer; a tensor already in
 * its target type is copied byte for byte. threads <= 0 means one. */
wk_status wk_quantize_file(const char *in_path, const char *out_path, const char *type_name,
                           int threads, wk_quantize_progress_fn progress, void *user,
                           wk_quantize_stats *stats);

#endif
