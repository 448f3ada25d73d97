/* Chat templates: each style's rendering equals the Jinja rendering of its
 * family's template (fixtures from scripts/gen-token-fixtures.py: SmolLM2's
 * own template, plain ChatML, Llama 2 chat, Llama 3 instruct, Zephyr), the
 * default model's template through the tokenizer, and the rejections. */
#include "check.h"
#include "wick.h"

static char *unhex(const char *h) {
    size_t n = strcmp(h, "-") == 0 ? 0 : strlen(h) / 2;
    char *s = malloc(n + 1);
    for (size_t i = 0; i < n; i++) {
        unsigned v;
        sscanf(h + 2 * i, "%2x", &v);
        s[i] = (char)v;
    }
    s[n] = 0;
    return s;
}

#define MAX_TEMPLATES 8

typedef struct named {
    char name[32];
    char *text;
} named;

static const char *find_template(named *t, int n, const char *name) {
    for (int i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) return t[i].text;
    return NULL;
}

static void print_escaped(const char *s) {
    for (; *s; s++) {
        if (*s == '\n')
            fputs("\\n", stderr);
        else
            fputc(*s, stderr);
    }
}

int main(void) {
    char path[4096];
    FILE *f = fopen(test_source_path("tests/fixtures/tokenizer/chat.txt", path, sizeof path), "r");
    CHECK_MSG(f != NULL, "cannot open %s", path);
    if (!f) TEST_MAIN_END();
    named templates[MAX_TEMPLATES];
    int n_templates = 0, cases = 0, matched = 0;
    size_t cap = 1 << 20;
    char *line = malloc(cap);
    while (fgets(line, (int)cap, f)) {
        char *tok = strtok(line, " \n");
        if (!tok) continue;
        if (strcmp(tok, "TEMPLATE") == 0 && n_templates < MAX_TEMPLATES) {
            snprintf(templates[n_templates].name, sizeof templates[0].name, "%s",
                     strtok(NULL, " \n"));
            templates[n_templates].text = unhex(strtok(NULL, " \n"));
            n_templates++;
            continue;
        }
        if (strcmp(tok, "CASE") != 0) continue;
        const char *name = strtok(NULL, " \n");
        bool add_gen = atoi(strtok(NULL, " \n"));
        int n = atoi(strtok(NULL, " \n"));
        wk_chat_msg msgs[16];
        char *owned[32];
        for (int i = 0; i < n; i++) {
            msgs[i].role = owned[2 * i] = unhex(strtok(NULL, " \n"));
            msgs[i].content = owned[2 * i + 1] = unhex(strtok(NULL, " \n"));
        }
        char *want = unhex(strtok(NULL, " \n"));
        const char *tmpl = find_template(templates, n_templates, name);
        CHECK_MSG(tmpl != NULL, "no template %s", name);
        char *got = NULL;
        cases++;
        CHECK_OK(wk_chat_apply(tmpl, "<s>", "</s>", msgs, (size_t)n, add_gen, &got));
        if (got && strcmp(got, want) == 0) {
            matched++;
        } else {
            check_failures++;
            fprintf(stderr, "%s (%d messages, add_generation_prompt %d):\n  wick:     ", name, n,
                    add_gen);
            print_escaped(got ? got : "(null)");
            fprintf(stderr, "\n  expected: ");
            print_escaped(want);
            fputc('\n', stderr);
        }
        check_count++;
        free(got);
        free(want);
        for (int i = 0; i < 2 * n; i++)
            free(owned[i]);
    }
    fclose(f);
    free(line);
    fprintf(stderr, "chat: %d of %d renderings match the Jinja templates\n", matched, cases);
    CHECK(cases >= 50);

    /* Styles recognised from the templates' text. */
    static const struct {
        const char *name;
        wk_chat_style style;
    } styles[] = {{"smollm2", WK_CHAT_CHATML}, {"chatml", WK_CHAT_CHATML},
                  {"qwen2", WK_CHAT_CHATML},   {"llama2", WK_CHAT_LLAMA2},
                  {"llama3", WK_CHAT_LLAMA3},  {"zephyr", WK_CHAT_ZEPHYR}};
    for (size_t i = 0; i < sizeof styles / sizeof styles[0]; i++) {
        const char *tmpl = find_template(templates, n_templates, styles[i].name);
        wk_chat_style s = 0;
        CHECK(tmpl != NULL);
        if (!tmpl) continue;
        CHECK_OK(wk_chat_detect(tmpl, &s));
        CHECK_MSG(s == styles[i].style, "%s detected as %s", styles[i].name, wk_chat_style_name(s));
    }

    /* Rejections. */
    wk_chat_style s;
    char *out = NULL;
    wk_chat_msg one = {"user", "hi"};
    CHECK_FAILS(wk_chat_detect("{{ messages }} ### Human: {{ x }}", &s), WK_ERR_UNSUPPORTED,
                "chat template not recognised");
    CHECK_FAILS(wk_chat_apply("{% for m in messages %}{{ m }}{% endfor %}", NULL, NULL, &one, 1,
                              true, &out),
                WK_ERR_UNSUPPORTED, "\"{% for m in messages %}{{ m }}{% endfor %}\"");
    CHECK(out == NULL);
    /* Look-alikes that render differently are refused, naming their family. */
    CHECK_FAILS(wk_chat_detect("{{ '<|im_start|>' + m['role'] + '<|im_sep|>' }}", &s),
                WK_ERR_UNSUPPORTED, "chat template of the Phi-4 style is not supported");
    CHECK_FAILS(wk_chat_detect("{{ bos_token }}{{ '[INST] ' + m['content'] + ' [/INST]' }}", &s),
                WK_ERR_UNSUPPORTED, "chat template of the Mistral style");
    CHECK_FAILS(wk_chat_detect("{{'<|user|>\n' + m['content'] + '<|end|>\n'}}<|assistant|>", &s),
                WK_ERR_UNSUPPORTED, "chat template of the Phi-3 style");
    const char *llama2 = find_template(templates, n_templates, "llama2");
    wk_chat_msg bad[] = {{"user", "a"}, {"user", "b"}};
    if (llama2)
        CHECK_FAILS(wk_chat_apply(llama2, NULL, NULL, bad, 2, true, &out), WK_ERR_INVALID,
                    "roles must alternate user/assistant/user/assistant/... (message 1 is 'user')");
    wk_chat_msg null_content = {"user", NULL};
    CHECK_FAILS(wk_chat_apply("<|im_start|>", NULL, NULL, &null_content, 1, true, &out),
                WK_ERR_INVALID, "message 0 has a NULL content");
    CHECK_FAILS(wk_chat_detect(NULL, &s), WK_ERR_INVALID, "NULL template");
    /* No messages: only the generation prompt. */
    CHECK_OK(wk_chat_apply("<|im_start|>", NULL, NULL, NULL, 0, true, &out));
    CHECK(out && strcmp(out, "<|im_start|>assistant\n") == 0);
    free(out);

    /* The default model: its own template, then its tokens. */
    const char *model = test_model_path();
    if (model) {
        wk_gguf *g = NULL;
        wk_tokenizer *tok = NULL;
        CHECK_OK(wk_gguf_open(model, &g));
        if (g) CHECK_OK(wk_tokenizer_create(g, &tok));
        if (tok) {
            wk_chat_msg q = {"user", "What is Rust?"};
            CHECK_OK(wk_tokenizer_chat_apply(tok, &q, 1, true, &out));
            const char *want = "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, "
                               "trained by Hugging Face<|im_end|>\n<|im_start|>user\nWhat is "
                               "Rust?<|im_end|>\n<|im_start|>assistant\n";
            CHECK(out && strcmp(out, want) == 0);
            int32_t *ids = NULL;
            size_t n = 0;
            if (out)
                CHECK_OK(wk_tokenizer_encode_alloc(tok, out, strlen(out), true, true, &ids, &n));
            /* Starts with <|im_start|> (1), ends with "assistant" "\n". */
            CHECK(n > 10 && ids[0] == 1);
            free(ids);
            free(out);
            wk_tokenizer_free(tok);
        }
        wk_gguf_close(g);
    }
    for (int i = 0; i < n_templates; i++)
        free(templates[i].text);
    TEST_MAIN_END();
}
