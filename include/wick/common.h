/* wick: status codes, the error message, tensor element types, devices. */
#ifndef WICK_COMMON_H
#define WICK_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum wk_status {
    WK_OK = 0,
    WK_ERR_IO,          /* a file could not be opened, read, mapped or written */
    WK_ERR_FORMAT,      /* a file's contents are malformed */
    WK_ERR_INVALID,     /* an argument is out of range or inconsistent */
    WK_ERR_NOMEM,       /* an allocation failed or would exceed a limit */
    WK_ERR_UNSUPPORTED, /* valid, but not something wick can do */
    WK_ERR_DEVICE,      /* a device (CUDA) call failed or no device is present */
} wk_status;

/* The message of the last failure on this thread ("" if none). */
const char *wk_last_error(void);
/* A short name for a status ("ok", "io", "format", ...). */
const char *wk_status_name(wk_status st);

/* Element and block types, numbered as in GGUF. */
typedef enum wk_type {
    WK_TYPE_F32 = 0,
    WK_TYPE_F16 = 1,
    WK_TYPE_Q4_0 = 2,
    WK_TYPE_Q4_1 = 3,
    WK_TYPE_Q5_0 = 6,
    WK_TYPE_Q5_1 = 7,
    WK_TYPE_Q8_0 = 8,
    WK_TYPE_Q8_1 = 9,
    WK_TYPE_Q2_K = 10,
    WK_TYPE_Q3_K = 11,
    WK_TYPE_Q4_K = 12,
    WK_TYPE_Q5_K = 13,
    WK_TYPE_Q6_K = 14,
    WK_TYPE_Q8_K = 15,
    WK_TYPE_BF16 = 30,
    WK_TYPE_COUNT = 31, /* one past the largest id; not every id below is a type */
} wk_type;

typedef enum wk_device {
    WK_DEVICE_CPU = 0,
    WK_DEVICE_CUDA = 1,
} wk_device;

/* "cpu" / "cuda"; and the reverse (WK_ERR_INVALID for an unknown name). */
const char *wk_device_name(wk_device d);
wk_status wk_device_from_name(const char *name, wk_device *out);

#ifdef __cplusplus
}
#endif
#endif
