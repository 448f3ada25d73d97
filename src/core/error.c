/* The per-thread message of the last failure. */
#include "core/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

enum { WK_ERROR_CAP = 1024 };
static _Thread_local char wk_error_message[WK_ERROR_CAP];

const char *wk_last_error(void) { return wk_error_message; }

void wk_clear_error(void) { wk_error_message[0] = '\0'; }

wk_status wk_fail(wk_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(wk_error_message, WK_ERROR_CAP, fmt, ap);
    va_end(ap);
    return st;
}

wk_status wk_fail_context(wk_status st, const char *fmt, ...)
{
    char prefix[WK_ERROR_CAP];
    char old[WK_ERROR_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, wk_error_message, WK_ERROR_CAP);
    size_t n = strlen(prefix);
    if (n > WK_ERROR_CAP - 3) n = WK_ERROR_CAP - 3;
    memcpy(wk_error_message, prefix, n);
    memcpy(wk_error_message + n, ": ", 2);
    size_t rest = WK_ERROR_CAP - n - 3;
    size_t m = strlen(old);
    if (m > rest) m = rest;
    memcpy(wk_error_message + n + 2, old, m);
    wk_error_message[n + 2 + m] = '\0';
    return st;
}

const char *wk_status_name(wk_status st)
{
    switch (st) {
    case WK_OK: return "ok";
    case WK_ERR_IO: return "io";
    case WK_ERR_FORMAT: return "format";
    case WK_ERR_INVALID: return "invalid";
    case WK_ERR_NOMEM: return "nomem";
    case WK_ERR_UNSUPPORTED: return "unsupported";
    case WK_ERR_DEVICE: return "device";
    }
    return "unknown";
}

const char *wk_device_name(wk_device d)
{
    switch (d) {
    case WK_DEVICE_CPU: return "cpu";
    case WK_DEVICE_CUDA: return "cuda";
    }
    return "?";
}

wk_status wk_device_from_name(const char *name, wk_device *out)
{
    if (name && strcmp(name, "cpu") == 0) {
        *out = WK_DEVICE_CPU;
        return WK_OK;
    }
    if (name && strcmp(name, "cuda") == 0) {
        *out = WK_DEVICE_CUDA;
        return WK_OK;
    }
    return wk_fail(WK_ERR_INVALID, "unknown device '%s' (expected cpu or cuda)", name ? name : "");
}
