/* The matmul form policy: names, the environment default (read once), and how a
 * weight type and a request resolve to the form that runs. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/error.h"
#include "tensor/engine_impl.h"
#include "wick/quant.h"

static const char *const wk_form_names[] = {
    [WK_FORM_AUTO] = "auto",   [WK_FORM_QUANTIZED] = "quantized", [WK_FORM_PRECISE] = "precise",
    [WK_FORM_F32] = "f32",     [WK_FORM_F16] = "f16",
};

const char *wk_form_name(wk_form f)
{
    if ((int)f < 0 || (int)f > WK_FORM_F16) return "?";
    return wk_form_names[f];
}

wk_status wk_form_from_name(const char *name, wk_form *out)
{
    for (int i = 0; name && i <= WK_FORM_F16; i++) {
        if (strcasecmp(name, wk_form_names[i]) == 0) {
            *out = (wk_form)i;
            return WK_OK;
        }
    }
    return wk_fail(WK_ERR_INVALID, "unknown matmul form '%s' (expected quantized, precise, f32 or f16)",
                   name ? name : "");
}

static wk_form wk_env_form = WK_FORM_QUANTIZED;
static pthread_once_t wk_env_once = PTHREAD_ONCE_INIT;

static bool wk_env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

static void wk_read_env_form(void)
{
    if (wk_env_flag("WICK_DEQUANTIZE_ALL")) wk_env_form = WK_FORM_F32;
    else if (wk_env_flag("WICK_DEQUANTIZE_ALL_F16")) wk_env_form = WK_FORM_F16;
    else wk_env_form = WK_FORM_QUANTIZED;
}

wk_form wk_form_from_env(void)
{
    pthread_once(&wk_env_once, wk_read_env_form);
    return wk_env_form;
}

wk_form wk_form_resolve(wk_type t, wk_form asked)
{
    wk_form f = asked == WK_FORM_AUTO ? wk_form_from_env() : asked;
    if (wk_type_is_quantized(t)) return f;
    /* Dense weights are always dense: the f32 and f16 forms as asked; otherwise
     * F32 weights run the f32 form and F16/BF16 weights run in their own type with
     * f32 activations (the precise form of a dense weight). */
    if (f == WK_FORM_F32 || f == WK_FORM_F16) return f;
    return t == WK_TYPE_F32 ? WK_FORM_F32 : WK_FORM_PRECISE;
}
