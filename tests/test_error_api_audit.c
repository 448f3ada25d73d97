/* The library never exits, aborts, asserts or prints: every source file under src/
 * (C, CUDA, headers) is read, its comments and string literals blanked, and each
 * call of exit/abort/assert/printf/puts/perror, and every use of stdout or stderr,
 * is reported with its file and line (programs kept under a bench/ folder are not
 * library code; reviewed exceptions are listed below). A failure of the library is
 * a status and a message (wk_fail), never a process-wide action. */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "check.h"

/* Calls that end the process or write to the terminal whatever their arguments.
 * (fprintf, fputs and fwrite to a FILE the library opened, such as the GGUF
 * writer's output, are fine; to stdout or stderr they are caught by name below.) */
static const char *const forbidden_calls[] = {
    "exit",    "_exit",  "_Exit",  "quick_exit", "abort",  "assert",         "printf",
    "vprintf", "puts",   "putchar", "perror",    "raise",  "__builtin_trap", "__trap",
};
static const char *const forbidden_names[] = {"stdout", "stderr"};

/* Reviewed exceptions: file (relative to src/), call, and why it is not reached
 * by any input. */
static const struct {
    const char *file, *name, *why;
} allowed[] = {
    {"cuda/qmatmul.cu", "__trap",
     "tensor-core code compiled for a GPU below compute capability 8.0, which the CUDA "
     "context refuses before any kernel runs"},
};

static int is_allowed(const char *path, const char *name, size_t len)
{
    for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++) {
        size_t pl = strlen(path), fl = strlen(allowed[i].file);
        if (pl >= fl && strcmp(path + pl - fl, allowed[i].file) == 0 &&
            strlen(allowed[i].name) == len && memcmp(allowed[i].name, name, len) == 0)
            return 1;
    }
    return 0;
}

static int violations = 0;
static int files_read = 0;
static int quiet = 0; /* during the self-test */

/* Blank comments, string and character literals (keeping newlines for line numbers). */
static void blank_non_code(char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
            size_t j = i;
            for (; j < n && !(s[j] == '*' && j + 1 < n && s[j + 1] == '/'); j++)
                if (s[j] != '\n') s[j] = ' ';
            for (size_t k = j; k < n && k < j + 2; k++) s[k] = ' ';
            i = j + 1;
        } else if (s[i] == '/' && i + 1 < n && s[i + 1] == '/') {
            for (; i < n && s[i] != '\n'; i++) s[i] = ' ';
        } else if (s[i] == '"' || s[i] == '\'') {
            char q = s[i];
            size_t j = i + 1;
            for (; j < n && s[j] != q && s[j] != '\n'; j++) {
                if (s[j] == '\\' && j + 1 < n) s[j++] = ' ';
                s[j] = ' ';
            }
            i = j;
        }
    }
}

static int is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

static void audit_text(const char *path, char *s, size_t n)
{
    blank_non_code(s, n);
    int line = 1;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '\n') line++;
        if (!is_ident(s[i]) || (i > 0 && is_ident(s[i - 1]))) continue;
        size_t j = i;
        while (j < n && is_ident(s[j])) j++;
        size_t len = j - i;
        size_t k = j;
        while (k < n && (s[k] == ' ' || s[k] == '\t')) k++;
        int call = k < n && s[k] == '(';
        /* a member or a declaration of our own (".exit(" or "wk_x->abort(") is not libc's */
        int member = i > 0 && (s[i - 1] == '.' || (i > 1 && s[i - 1] == '>' && s[i - 2] == '-'));
        for (size_t f = 0; call && !member && f < sizeof forbidden_calls / sizeof *forbidden_calls;
             f++)
            if (strlen(forbidden_calls[f]) == len && memcmp(forbidden_calls[f], s + i, len) == 0 &&
                !is_allowed(path, s + i, len)) {
                if (!quiet) fprintf(stderr, "%s:%d: calls %s()\n", path, line, forbidden_calls[f]);
                violations++;
            }
        for (size_t f = 0; f < sizeof forbidden_names / sizeof *forbidden_names; f++)
            if (strlen(forbidden_names[f]) == len && memcmp(forbidden_names[f], s + i, len) == 0) {
                if (!quiet) fprintf(stderr, "%s:%d: uses %s\n", path, line, forbidden_names[f]);
                violations++;
            }
        i = j - 1;
    }
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && strcmp(s + a - b, suf) == 0;
}

static void audit_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "%s: cannot read\n", path);
        violations++;
        return;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) == (size_t)n) {
        s[n] = '\0';
        audit_text(path, s, (size_t)n);
        files_read++;
    }
    free(s);
    fclose(f);
}

static void audit_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        /* programs kept beside the library (src/cuda/bench/) are not the library */
        if (e->d_name[0] == '.' || strcmp(e->d_name, "bench") == 0) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat sb;
        if (stat(path, &sb) != 0) continue;
        if (S_ISDIR(sb.st_mode)) audit_dir(path);
        else if (has_suffix(path, ".c") || has_suffix(path, ".h") || has_suffix(path, ".cu") ||
                 has_suffix(path, ".cuh"))
            audit_file(path);
    }
    closedir(d);
}

/* The auditor itself must see what it looks for. */
static void self_test(void)
{
    char text[] = "/* exit(1) */ x = \"abort()\"; // printf(\n if (bad) abort ();\n"
                  "fprintf(stderr, \"x\"); snprintf(b, 1, \"\"); static_assert(1, \"\");"
                  " ops.exit(); wk_exit(0); puts(s);\n";
    int before = violations;
    quiet = 1;
    audit_text("self-test", text, strlen(text));
    quiet = 0;
    CHECK_EQ_INT(violations - before, 3); /* abort, stderr, puts */
    violations = before;
}

int main(void)
{
    self_test();
    char src[4096];
    test_source_path("src", src, sizeof src);
    audit_dir(src);
    fprintf(stderr, "audited %d files under %s\n", files_read, src);
    CHECK_MSG(files_read > 10, "only %d source files found under %s", files_read, src);
    CHECK_MSG(violations == 0, "%d uses of exit/abort/assert/printing in the library", violations);
    TEST_MAIN_END();
}
