/* Fuzz target: chat-template recognition and rendering.
 *
 * Input: a mode byte, then NUL-separated fields. Even modes render messages with
 * one of the real templates (ChatML with SmolLM2's default system prompt, Llama 2,
 * Llama 3, Zephyr); odd modes take the template text itself from the input. The
 * remaining fields are role, content, role, content, ... (arbitrary bytes, invalid
 * UTF-8 and template syntax included). Checked: recognition and rendering either
 * succeed with a NUL-terminated string or fail with a message; rendering is
 * deterministic. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "wick.h"

static const char *const templates[] = {
    /* SmolLM2 (ChatML with a default system prompt) */
    "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging "
    "Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + "
    "message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}"
    "{{ '<|im_start|>assistant\n' }}{% endif %}",
    /* Llama 2 */
    "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set "
    "system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% "
    "set system_message = false %}{% endif %}{% for message in loop_messages %}{% if "
    "(message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation "
    "roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == "
    "0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + "
    "'\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] "
    "%}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() "
    "+ ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + "
    "eos_token }}{% endif %}{% endfor %}",
    /* Llama 3 */
    "{% set loop_messages = messages %}{% for message in loop_messages %}{% set content = "
    "'<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | "
    "trim + '<|eot_id|>' %}{% if loop.index0 == 0 %}{% set content = bos_token + content %}{% "
    "endif %}{{ content }}{% endfor %}{% if add_generation_prompt %}{{ "
    "'<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %}",
    /* Zephyr */
    "{% for message in messages %}\n{% if message['role'] == 'user' %}\n{{ '<|user|>\n' + "
    "message['content'] + eos_token }}\n{% elif message['role'] == 'system' %}\n{{ "
    "'<|system|>\n' + message['content'] + eos_token }}\n{% elif message['role'] == "
    "'assistant' %}\n{{ '<|assistant|>\n'  + message['content'] + eos_token }}\n{% endif "
    "%}\n{% if loop.last and add_generation_prompt %}\n{{ '<|assistant|>' }}\n{% endif %}\n{% "
    "endfor %}",
};

enum { MAX_MSGS = 16 };

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    /* a NUL-terminated copy, split at NUL bytes into fields */
    char *buf = malloc(size + 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, size - 1);
    buf[size - 1] = '\0';
    const char *fields[2 * MAX_MSGS + 1];
    size_t n_fields = 0;
    for (size_t i = 0; i < size && n_fields < 2 * MAX_MSGS + 1;) {
        fields[n_fields++] = buf + i;
        i += strlen(buf + i) + 1;
        if (i >= size) break;
    }
    uint8_t mode = data[0];
    const char *tmpl;
    size_t first = 0;
    if (mode & 1) {
        tmpl = n_fields ? fields[0] : "";
        first = 1;
    } else {
        tmpl = templates[(mode >> 1) % 4];
    }
    wk_chat_style style;
    wk_status dst = wk_chat_detect(tmpl, &style);
    if (dst == WK_OK) (void)wk_chat_style_name(style);
    else if (!*wk_last_error()) abort();

    wk_chat_msg msgs[MAX_MSGS];
    size_t n_msgs = 0;
    for (size_t f = first; f + 1 < n_fields && n_msgs < MAX_MSGS; f += 2) {
        msgs[n_msgs].role = fields[f];
        msgs[n_msgs].content = fields[f + 1];
        n_msgs++;
    }
    /* sometimes the usual roles, so that rendering gets past role checks */
    if (mode & 2)
        for (size_t i = 0; i < n_msgs; i++) msgs[i].role = i % 2 ? "assistant" : "user";
    if ((mode & 4) && n_msgs) msgs[0].role = "system";

    bool add_gen = mode & 8;
    const char *bos = (mode & 16) ? "<s>" : NULL, *eos = (mode & 16) ? "</s>" : NULL;
    char *out = NULL;
    wk_status st = wk_chat_apply(tmpl, bos, eos, msgs, n_msgs, add_gen, &out);
    if (st == WK_OK) {
        if (!out) abort();
        size_t len = strlen(out);
        (void)len;
        /* deterministic */
        char *again = NULL;
        if (wk_chat_apply(tmpl, bos, eos, msgs, n_msgs, add_gen, &again) != WK_OK || !again ||
            strcmp(out, again) != 0)
            abort();
        free(again);
        free(out);
    } else {
        if (!*wk_last_error()) abort();
        if (dst != WK_OK && st == WK_OK) abort();
    }
    free(buf);
    return 0;
}
