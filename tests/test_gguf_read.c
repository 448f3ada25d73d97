/* Reading the default model: header, metadata getters and the tensor table,
 * checked against values read independently with the gguf Python package. */
#include "check.h"
#include "wick.h"

static void check_model(const char *path)
{
    wk_gguf *g = NULL;
    CHECK_OK(wk_gguf_open(path, &g));
    if (!g) return;
    CHECK_EQ_INT(wk_gguf_version(g), 3);
    CHECK_EQ_INT(wk_gguf_alignment(g), 32);
    CHECK_EQ_INT(wk_gguf_n_kv(g), 33);
    CHECK_EQ_INT(wk_gguf_n_tensors(g), 272);
    CHECK_EQ_INT(wk_gguf_data_offset(g), 1785664);

    const char *s;
    size_t len;
    CHECK_OK(wk_gguf_get_str(g, "general.architecture", &s, &len));
    CHECK(strcmp(s, "llama") == 0 && len == 5);
    uint32_t u32;
    CHECK_OK(wk_gguf_get_u32(g, "llama.embedding_length", &u32));
    CHECK_EQ_INT(u32, 576);
    int32_t i32;
    CHECK_OK(wk_gguf_get_i32(g, "llama.block_count", &i32));
    CHECK_EQ_INT(i32, 30);
    uint64_t u64;
    CHECK_OK(wk_gguf_get_u64(g, "llama.context_length", &u64));
    CHECK_EQ_INT(u64, 8192);
    float f;
    CHECK_OK(wk_gguf_get_f32(g, "llama.rope.freq_base", &f));
    CHECK_NEAR(f, 100000.0, 0);
    bool b = true;
    CHECK_OK(wk_gguf_get_bool(g, "tokenizer.ggml.add_space_prefix", &b));
    CHECK(!b);

    wk_gguf_vtype et;
    uint64_t n;
    CHECK_OK(wk_gguf_get_arr(g, "tokenizer.ggml.tokens", &et, &n));
    CHECK_EQ_INT(et, WK_GGUF_STRING);
    CHECK_EQ_INT(n, 49152);
    CHECK_OK(wk_gguf_get_arr_str(g, "tokenizer.ggml.tokens", 0, &s, &len));
    CHECK(strcmp(s, "<|endoftext|>") == 0);
    CHECK_OK(wk_gguf_get_arr(g, "tokenizer.ggml.token_type", &et, &n));
    CHECK_EQ_INT(et, WK_GGUF_INT32);
    const void *data;
    CHECK_OK(wk_gguf_get_arr_data(g, "tokenizer.ggml.token_type", &data));
    CHECK_EQ_INT(((const int32_t *)data)[0], 3);
    CHECK_EQ_INT(((const int32_t *)data)[1000], 1);

    const wk_gguf_tensor *t = wk_gguf_tensor_at(g, 0);
    CHECK(t && strcmp(t->name, "token_embd.weight") == 0);
    if (t) {
        CHECK_EQ_INT(t->type, WK_TYPE_Q8_0);
        CHECK_EQ_INT(t->n_dims, 2);
        CHECK_EQ_INT(t->ne[0], 576);
        CHECK_EQ_INT(t->ne[1], 49152);
        CHECK_EQ_INT(t->nbytes, 30081024);
        CHECK(t->data == (const char *)wk_gguf_tensor_at(g, 0)->data);
    }
    CHECK(wk_gguf_find_tensor(g, "blk.29.ffn_down.weight") != NULL);
    CHECK(wk_gguf_find_tensor(g, "blk.30.ffn_down.weight") == NULL);
    CHECK_EQ_INT(wk_gguf_find_key(g, "no.such.key"), -1);
    CHECK_FAILS(wk_gguf_get_u32(g, "no.such.key", &u32), WK_ERR_FORMAT,
                "key 'no.such.key' not found");
    CHECK_FAILS(wk_gguf_get_u32(g, "general.name", &u32), WK_ERR_FORMAT,
                "key 'general.name' is a string, not an integer");
    wk_gguf_close(g);
}

/* The same bytes opened from memory give the same tables, with data pointers
 * into the caller's buffer. */
static void check_memory(const char *path)
{
    wk_gguf *g = NULL, *m = NULL;
    CHECK_OK(wk_gguf_open(path, &g));
    if (!g) return;
    size_t size = wk_gguf_file_size(g);
    unsigned char *bytes = malloc(size);
    FILE *f = fopen(path, "rb");
    CHECK(f && fread(bytes, 1, size, f) == size);
    if (f) fclose(f);
    CHECK_OK(wk_gguf_open_memory(bytes, size, "in-memory", &m));
    if (m) {
        CHECK(strcmp(wk_gguf_path(m), "in-memory") == 0);
        CHECK_EQ_INT(wk_gguf_n_kv(m), wk_gguf_n_kv(g));
        CHECK_EQ_INT(wk_gguf_n_tensors(m), wk_gguf_n_tensors(g));
        int same = 1;
        for (int64_t i = 0; i < wk_gguf_n_kv(g); i++) {
            char a[256], b[256];
            wk_gguf_format_value(g, i, a, sizeof a);
            wk_gguf_format_value(m, i, b, sizeof b);
            same &= strcmp(wk_gguf_key(g, i), wk_gguf_key(m, i)) == 0 && strcmp(a, b) == 0;
        }
        for (int64_t i = 0; i < wk_gguf_n_tensors(g); i++) {
            const wk_gguf_tensor *a = wk_gguf_tensor_at(g, i), *b = wk_gguf_tensor_at(m, i);
            same &= strcmp(a->name, b->name) == 0 && a->nbytes == b->nbytes &&
                    (const unsigned char *)b->data == bytes + wk_gguf_data_offset(m) + b->offset &&
                    memcmp(a->data, b->data, a->nbytes) == 0;
            /* mmap'd data is aligned to the file's alignment */
            same &= (uintptr_t)a->data % wk_gguf_alignment(g) == 0;
        }
        CHECK(same);
        wk_gguf_close(m);
    }
    free(bytes);
    wk_gguf_close(g);

    /* argument errors */
    CHECK_FAILS(wk_gguf_open(NULL, &g), WK_ERR_INVALID, "wk_gguf_open: NULL argument");
    CHECK_FAILS(wk_gguf_open_memory(NULL, 10, "x", &g), WK_ERR_INVALID,
                "wk_gguf_open_memory: NULL argument");
    wk_gguf_close(NULL);
}

int main(void)
{
    const char *model = test_model_path();
    if (model) check_model(model);
    if (model) check_memory(model);
    else CHECK(model != NULL);
    TEST_MAIN_END();
}
