/* Internal: recording the message of a failure. */
#ifndef WICK_CORE_ERROR_H
#define WICK_CORE_ERROR_H

#include "wick/common.h"

#if defined(__GNUC__)
#define WK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define WK_PRINTF(a, b)
#endif

/* Record a message for wk_last_error() and return st, so that a failure is one line:
 *     return wk_fail(WK_ERR_FORMAT, "%s: tensor '%s': offset %llu outside the file", ...); */
wk_status wk_fail(wk_status st, const char *fmt, ...) WK_PRINTF(2, 3);
/* Prefix the current message ("context: message"), returning st. */
wk_status wk_fail_context(wk_status st, const char *fmt, ...) WK_PRINTF(2, 3);
void wk_clear_error(void);

#endif
