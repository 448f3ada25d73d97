/* wick: chat templates. The style is recognised from markers in the
 * tokenizer.chat_template text and each style is rendered by code that follows
 * the Jinja templates of its family (no Jinja interpreter). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "model/tokenizer_internal.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    bool oom;
} sbuf;

static void put_n(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->oom = true;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void put(sbuf *b, const char *s) {
    put_n(b, s, strlen(s));
}

static bool is_ascii_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Append s without leading and trailing whitespace (Jinja's trim / strip()). */
static void put_trimmed(sbuf *b, const char *s) {
    size_t a = 0, e = strlen(s);
    while (a < e && is_ascii_space(s[a]))
        a++;
    while (e > a && is_ascii_space(s[e - 1]))
        e--;
    put_n(b, s + a, e - a);
}

const char *wk_chat_style_name(wk_chat_style style) {
    switch (style) {
    case WK_CHAT_CHATML:
        return "chatml";
    case WK_CHAT_LLAMA2:
        return "llama2";
    case WK_CHAT_LLAMA3:
        return "llama3";
    case WK_CHAT_ZEPHYR:
        return "zephyr";
    }
    return "unknown";
}

/* Markers of families that look like the four but render differently
 * (Phi-4 and SmolVLM use <|im_start|>, Mistral uses [INST] without <<SYS>>,
 * Phi-3 closes turns with <|end|>): refused rather than rendered wrongly. */
static const char *lookalike(const char *tmpl) {
    if (strstr(tmpl, "<|im_sep|>")) return "Phi-4";
    if (strstr(tmpl, "<end_of_utterance>")) return "SmolVLM";
    if (strstr(tmpl, "[INST]") && !strstr(tmpl, "<<SYS>>")) return "Mistral";
    if (strstr(tmpl, "<|user|>") && strstr(tmpl, "<|end|>")) return "Phi-3";
    return NULL;
}

wk_status wk_chat_detect(const char *tmpl, wk_chat_style *out) {
    if (!tmpl) return wk_fail(WK_ERR_INVALID, "chat template: NULL template");
    char head[61];
    snprintf(head, sizeof head, "%s", tmpl);
    for (char *c = head; *c; c++)
        if (*c == '\n') *c = ' ';
    const char *dots = strlen(tmpl) > 60 ? "..." : "";
    const char *like = lookalike(tmpl);
    if (like)
        return wk_fail(WK_ERR_UNSUPPORTED,
                       "chat template of the %s style is not supported (wick knows ChatML, "
                       "Llama 2, Llama 3 and Zephyr styles): \"%s%s\"",
                       like, head, dots);
    if (strstr(tmpl, "<|im_start|>")) {
        *out = WK_CHAT_CHATML;
    } else if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "<|end_header_id|>")) {
        *out = WK_CHAT_LLAMA3;
    } else if (strstr(tmpl, "[INST]")) {
        *out = WK_CHAT_LLAMA2;
    } else if (strstr(tmpl, "<|user|>") && strstr(tmpl, "<|assistant|>")) {
        *out = WK_CHAT_ZEPHYR;
    } else {
        return wk_fail(WK_ERR_UNSUPPORTED,
                       "chat template not recognised (wick knows ChatML, Llama 2, Llama 3 and "
                       "Zephyr styles): \"%s%s\"",
                       head, dots);
    }
    return WK_OK;
}

/* The Jinja string literal starting at q (a quote): its unescaped value. */
static char *jinja_literal(const char *q) {
    char quote = *q++;
    sbuf b = {0};
    put(&b, "");
    for (; *q && *q != quote; q++) {
        if (*q == '\\' && q[1]) {
            q++;
            char c = *q == 'n' ? '\n' : *q == 't' ? '\t' : *q == 'r' ? '\r' : *q;
            put_n(&b, &c, 1);
        } else {
            put_n(&b, q, 1);
        }
    }
    if (!*q || b.oom) {
        free(b.p);
        return NULL;
    }
    return b.p;
}

/* A ChatML template's default system block: the first string literal that
 * opens a system turn, written where the template tests that the first
 * message is not a system one (SmolLM2: "!= 'system'"; Qwen2: an else branch
 * after "== 'system'"). NULL when there is none. */
static char *chatml_default_system(const char *tmpl) {
    static const char *const conds[] = {
        "messages[0]['role'] != 'system'", "messages[0][\"role\"] != \"system\"",
        "messages[0]['role'] == 'system'", "messages[0][\"role\"] == \"system\""};
    for (size_t c = 0; c < sizeof conds / sizeof conds[0]; c++) {
        const char *at = strstr(tmpl, conds[c]);
        if (!at) continue;
        at += strlen(conds[c]);
        if (c >= 2) { /* the default is in the else branch */
            const char *e = strstr(at, "else");
            if (!e) continue;
            at = e;
        }
        for (const char *q = at; *q; q++) {
            if (*q != '\'' && *q != '"') continue;
            char *lit = jinja_literal(q);
            if (!lit) return NULL;
            if (strncmp(lit, "<|im_start|>system", 18) == 0 && strstr(lit, "<|im_end|>"))
                return lit;
            /* Skip past this literal. */
            char quote = *q;
            for (q++; *q && *q != quote; q++)
                if (*q == '\\' && q[1]) q++;
            free(lit);
            if (!*q) break;
        }
    }
    return NULL;
}

static wk_status render_chatml(const char *tmpl, const wk_chat_msg *m, size_t n, bool add_gen,
                               sbuf *b) {
    if (n > 0 && strcmp(m[0].role, "system") != 0) {
        char *sys = chatml_default_system(tmpl);
        if (sys) put(b, sys);
        free(sys);
    }
    for (size_t i = 0; i < n; i++) {
        put(b, "<|im_start|>");
        put(b, m[i].role);
        put(b, "\n");
        put(b, m[i].content);
        put(b, "<|im_end|>\n");
    }
    if (add_gen) put(b, "<|im_start|>assistant\n");
    return WK_OK;
}

static wk_status render_llama3(const wk_chat_msg *m, size_t n, bool add_gen, sbuf *b) {
    for (size_t i = 0; i < n; i++) {
        put(b, "<|start_header_id|>");
        put(b, m[i].role);
        put(b, "<|end_header_id|>\n\n");
        put_trimmed(b, m[i].content);
        put(b, "<|eot_id|>");
    }
    if (add_gen) put(b, "<|start_header_id|>assistant<|end_header_id|>\n\n");
    return WK_OK;
}

/* Llama 2 chat: an optional system message folded into the first user turn,
 * then user/assistant turns that must alternate. */
static wk_status render_llama2(const char *tmpl, const char *bos, const char *eos,
                               const wk_chat_msg *m, size_t n, sbuf *b) {
    bool has_sys_block = strstr(tmpl, "<<SYS>>") != NULL;
    bool strip = strstr(tmpl, ".strip()") || strstr(tmpl, "trim");
    const char *sys = NULL;
    if (n > 0 && strcmp(m[0].role, "system") == 0) {
        sys = m[0].content;
        m++;
        n--;
    }
    for (size_t i = 0; i < n; i++) {
        bool user = strcmp(m[i].role, "user") == 0;
        if (user != (i % 2 == 0))
            return wk_fail(WK_ERR_INVALID,
                           "chat template (llama2): conversation roles must alternate "
                           "user/assistant/user/assistant/... (message %zu is '%s')",
                           i + (sys != NULL), m[i].role);
        sbuf content = {0};
        if (i == 0 && sys) {
            if (has_sys_block) {
                put(&content, "<<SYS>>\n");
                put(&content, sys);
                put(&content, "\n<</SYS>>\n\n");
            } else {
                put(&content, sys);
                put(&content, "\n");
            }
        }
        put(&content, m[i].content);
        if (content.oom) {
            free(content.p);
            return wk_fail(WK_ERR_NOMEM, "chat template: out of memory");
        }
        if (user) {
            if (b->n > 0) put(b, bos); /* the leading BOS is the tokenizer's */
            put(b, "[INST] ");
            if (strip)
                put_trimmed(b, content.p);
            else
                put(b, content.p);
            put(b, " [/INST]");
        } else if (strcmp(m[i].role, "assistant") == 0) {
            put(b, " ");
            if (strip)
                put_trimmed(b, content.p);
            else
                put(b, content.p);
            put(b, " ");
            put(b, eos);
        }
        free(content.p);
    }
    return WK_OK;
}

static wk_status render_zephyr(const char *tmpl, const char *eos, const wk_chat_msg *m, size_t n,
                               bool add_gen, sbuf *b) {
    /* Some Zephyr-style templates write the end token literally. */
    if (strstr(tmpl, "<|endoftext|>")) eos = "<|endoftext|>";
    for (size_t i = 0; i < n; i++) {
        const char *r = m[i].role;
        if (strcmp(r, "user") == 0 || strcmp(r, "system") == 0 || strcmp(r, "assistant") == 0) {
            put(b, "<|");
            put(b, r);
            put(b, "|>\n");
            put(b, m[i].content);
            put(b, eos);
            put(b, "\n");
        }
        if (i + 1 == n && add_gen) put(b, "<|assistant|>\n");
    }
    return WK_OK;
}

wk_status wk_chat_apply(const char *tmpl, const char *bos_token, const char *eos_token,
                        const wk_chat_msg *msgs, size_t n_msgs, bool add_generation_prompt,
                        char **out) {
    *out = NULL;
    wk_chat_style style;
    wk_status st = wk_chat_detect(tmpl, &style);
    if (st != WK_OK) return st;
    if (n_msgs && !msgs) return wk_fail(WK_ERR_INVALID, "chat template: NULL messages");
    for (size_t i = 0; i < n_msgs; i++)
        if (!msgs[i].role || !msgs[i].content)
            return wk_fail(WK_ERR_INVALID, "chat template: message %zu has a NULL %s", i,
                           msgs[i].role ? "content" : "role");
    const char *bos = bos_token ? bos_token : "<s>";
    const char *eos = eos_token ? eos_token : "</s>";
    sbuf b = {0};
    put(&b, "");
    switch (style) {
    case WK_CHAT_CHATML:
        st = render_chatml(tmpl, msgs, n_msgs, add_generation_prompt, &b);
        break;
    case WK_CHAT_LLAMA3:
        st = render_llama3(msgs, n_msgs, add_generation_prompt, &b);
        break;
    case WK_CHAT_LLAMA2:
        st = render_llama2(tmpl, bos, eos, msgs, n_msgs, &b);
        break;
    case WK_CHAT_ZEPHYR:
        st = render_zephyr(tmpl, eos, msgs, n_msgs, add_generation_prompt, &b);
        break;
    }
    if (st == WK_OK && b.oom) st = wk_fail(WK_ERR_NOMEM, "chat template: out of memory");
    if (st != WK_OK) {
        free(b.p);
        return st;
    }
    *out = b.p;
    return WK_OK;
}

wk_status wk_tokenizer_chat_apply(const wk_tokenizer *tok, const wk_chat_msg *msgs, size_t n_msgs,
                                  bool add_generation_prompt, char **out) {
    *out = NULL;
    if (!tok->chat_template)
        return wk_fail(WK_ERR_UNSUPPORTED, "the model has no tokenizer.chat_template");
    const char *bos = tok->bos >= 0 ? wk_tok_str(tok, tok->text[tok->bos]) : NULL;
    const char *eos = tok->eos >= 0 ? wk_tok_str(tok, tok->text[tok->eos]) : NULL;
    return wk_chat_apply(tok->chat_template, bos, eos, msgs, n_msgs, add_generation_prompt, out);
}
