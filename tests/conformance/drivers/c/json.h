/* A minimal JSON reader and writer for the conformance drivers (C and C++).
 *
 * The protocol's requests are flat objects of strings, numbers, booleans, null and arrays;
 * this reads any JSON value, keeps numbers as their text (so 64-bit integers stay exact)
 * and decodes strings to UTF-8. Not a general-purpose library: no streaming, no limits
 * beyond memory. */
#ifndef CONFORMANCE_JSON_H
#define CONFORMANCE_JSON_H

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { J_NULL, J_BOOL, J_NUM, J_STR, J_ARR, J_OBJ } jtype;

typedef struct jval {
    jtype type;
    bool boolean;
    char *text;        /* J_NUM: the number as written; J_STR: the decoded string */
    size_t len;        /* J_STR: its length in bytes */
    size_t count;      /* J_ARR, J_OBJ: how many items */
    struct jval *items;
    char **keys;       /* J_OBJ */
} jval;

typedef struct {
    const char *p;
    const char *error;
} jparser;

static inline void j_ws(jparser *ps) {
    while (*ps->p == ' ' || *ps->p == '\t' || *ps->p == '\n' || *ps->p == '\r') ps->p++;
}

static inline void j_put_utf8(char *out, size_t *n, uint32_t c) {
    if (c < 0x80) {
        out[(*n)++] = (char)c;
    } else if (c < 0x800) {
        out[(*n)++] = (char)(0xC0 | (c >> 6));
        out[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
        out[(*n)++] = (char)(0xE0 | (c >> 12));
        out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (c & 0x3F));
    } else {
        out[(*n)++] = (char)(0xF0 | (c >> 18));
        out[(*n)++] = (char)(0x80 | ((c >> 12) & 0x3F));
        out[(*n)++] = (char)(0x80 | ((c >> 6) & 0x3F));
        out[(*n)++] = (char)(0x80 | (c & 0x3F));
    }
}

static inline int j_hex4(const char *s, uint32_t *out) {
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        v <<= 4;
        if (c >= '0' && c <= '9') v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (uint32_t)(c - 'A' + 10);
        else return -1;
    }
    *out = v;
    return 0;
}

static inline char *j_string(jparser *ps, size_t *len_out) {
    /* at the opening quote */
    ps->p++;
    size_t cap = strlen(ps->p) + 1, n = 0;
    char *out = (char *)malloc(cap);
    while (*ps->p && *ps->p != '"') {
        char c = *ps->p++;
        if (c != '\\') { out[n++] = c; continue; }
        c = *ps->p++;
        switch (c) {
        case '"': out[n++] = '"'; break;
        case '\\': out[n++] = '\\'; break;
        case '/': out[n++] = '/'; break;
        case 'b': out[n++] = '\b'; break;
        case 'f': out[n++] = '\f'; break;
        case 'n': out[n++] = '\n'; break;
        case 'r': out[n++] = '\r'; break;
        case 't': out[n++] = '\t'; break;
        case 'u': {
            uint32_t cp;
            if (j_hex4(ps->p, &cp)) { ps->error = "bad \\u escape"; free(out); return NULL; }
            ps->p += 4;
            if (cp >= 0xD800 && cp < 0xDC00 && ps->p[0] == '\\' && ps->p[1] == 'u') {
                uint32_t lo;
                if (!j_hex4(ps->p + 2, &lo) && lo >= 0xDC00 && lo < 0xE000) {
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                    ps->p += 6;
                }
            }
            j_put_utf8(out, &n, cp);
            break;
        }
        default: ps->error = "bad escape"; free(out); return NULL;
        }
    }
    if (*ps->p != '"') { ps->error = "unterminated string"; free(out); return NULL; }
    ps->p++;
    out[n] = 0;
    *len_out = n;
    return out;
}

static inline int j_value(jparser *ps, jval *v);

static inline int j_value(jparser *ps, jval *v) {
    memset(v, 0, sizeof *v);
    j_ws(ps);
    const char *p = ps->p;
    if (*p == '"') {
        v->type = J_STR;
        v->text = j_string(ps, &v->len);
        return v->text ? 0 : -1;
    }
    if (*p == '{' || *p == '[') {
        bool obj = *p == '{';
        v->type = obj ? J_OBJ : J_ARR;
        ps->p++;
        size_t cap = 0;
        j_ws(ps);
        if (*ps->p == (obj ? '}' : ']')) { ps->p++; return 0; }
        for (;;) {
            if (v->count == cap) {
                cap = cap ? cap * 2 : 8;
                v->items = (jval *)realloc(v->items, cap * sizeof(jval));
                if (obj) v->keys = (char **)realloc(v->keys, cap * sizeof(char *));
            }
            if (obj) {
                j_ws(ps);
                if (*ps->p != '"') { ps->error = "expected a key"; return -1; }
                size_t klen;
                char *key = j_string(ps, &klen);
                if (!key) return -1;
                v->keys[v->count] = key;
                j_ws(ps);
                if (*ps->p != ':') { ps->error = "expected ':'"; v->count++; v->items[v->count - 1].type = J_NULL; return -1; }
                ps->p++;
            }
            if (j_value(ps, &v->items[v->count])) { v->count++; return -1; }
            v->count++;
            j_ws(ps);
            if (*ps->p == ',') { ps->p++; continue; }
            if (*ps->p == (obj ? '}' : ']')) { ps->p++; return 0; }
            ps->error = "expected ',' or a closing bracket";
            return -1;
        }
    }
    if (!strncmp(p, "true", 4)) { v->type = J_BOOL; v->boolean = true; ps->p += 4; return 0; }
    if (!strncmp(p, "false", 5)) { v->type = J_BOOL; ps->p += 5; return 0; }
    if (!strncmp(p, "null", 4)) { v->type = J_NULL; ps->p += 4; return 0; }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        const char *start = p;
        while (*p && strchr("+-0123456789.eE", *p)) p++;
        v->type = J_NUM;
        v->len = (size_t)(p - start);
        v->text = (char *)malloc(v->len + 1);
        memcpy(v->text, start, v->len);
        v->text[v->len] = 0;
        ps->p = p;
        return 0;
    }
    ps->error = "unexpected character";
    return -1;
}

static inline void j_free(jval *v) {
    if (!v) return;
    free(v->text);
    for (size_t i = 0; i < v->count; i++) {
        j_free(&v->items[i]);
        if (v->keys) free(v->keys[i]);
    }
    free(v->items);
    free(v->keys);
    memset(v, 0, sizeof *v);
}

/* Parse one line; 0 on success, else -1 with *error set. */
static inline int j_parse(const char *text, jval *out, const char **error) {
    jparser ps = {text, NULL};
    if (j_value(&ps, out)) {
        *error = ps.error ? ps.error : "bad JSON";
        j_free(out);
        return -1;
    }
    j_ws(&ps);
    if (*ps.p) {
        *error = "trailing characters";
        j_free(out);
        return -1;
    }
    return 0;
}

/* The member `key` of an object, or NULL when absent. */
static inline const jval *j_get(const jval *obj, const char *key) {
    if (!obj || obj->type != J_OBJ) return NULL;
    for (size_t i = 0; i < obj->count; i++)
        if (!strcmp(obj->keys[i], key)) return &obj->items[i];
    return NULL;
}

/* Whether a number's text is an integer (no fraction, no exponent). */
static inline bool j_is_integer(const jval *v) {
    return v && v->type == J_NUM && !strpbrk(v->text, ".eE");
}

static inline int j_int64(const jval *v, int64_t *out) {
    if (!j_is_integer(v)) return -1;
    errno = 0;
    char *end;
    long long x = strtoll(v->text, &end, 10);
    if (errno || *end) return -1;
    *out = (int64_t)x;
    return 0;
}

static inline int j_uint64(const jval *v, uint64_t *out) {
    if (!j_is_integer(v) || v->text[0] == '-') return -1;
    errno = 0;
    char *end;
    unsigned long long x = strtoull(v->text, &end, 10);
    if (errno || *end) return -1;
    *out = (uint64_t)x;
    return 0;
}

/* ---- writing ---- */

typedef struct {
    char *data;
    size_t len, cap;
} jbuf;

static inline void jb_add(jbuf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        b->cap = (b->len + n + 1) * 2;
        b->data = (char *)realloc(b->data, b->cap);
    }
    memcpy(b->data + b->len, s, n);
    b->len += n;
    b->data[b->len] = 0;
}

static inline void jb_s(jbuf *b, const char *s) { jb_add(b, s, strlen(s)); }

static inline void jb_f(jbuf *b, const char *fmt, ...) {
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    jb_add(b, tmp, (size_t)n);
}

static inline void jb_u64(jbuf *b, uint64_t v) { jb_f(b, "%" PRIu64, v); }

/* A JSON string of n bytes (control characters escaped; other bytes as they are). */
static inline void jb_str(jbuf *b, const char *s, size_t n) {
    jb_add(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') jb_add(b, "\\\"", 2);
        else if (c == '\\') jb_add(b, "\\\\", 2);
        else if (c == '\n') jb_add(b, "\\n", 2);
        else if (c == '\r') jb_add(b, "\\r", 2);
        else if (c == '\t') jb_add(b, "\\t", 2);
        else if (c < 0x20) jb_f(b, "\\u%04x", c);
        else jb_add(b, (const char *)&s[i], 1);
    }
    jb_add(b, "\"", 1);
}

static inline void jb_cstr(jbuf *b, const char *s) { jb_str(b, s ? s : "", s ? strlen(s) : 0); }

#endif
