/* The text buffer the JSON line writers fill (recordlines.c, batchlines.c) and what they put in it
 * that both write: text, str objects, 64-bit ints.  The literals they write are line_literals.h's.
 * Include after <Python.h> and <stdint.h>. */
#ifndef KAFKADUMP_JSONOUT_H
#define KAFKADUMP_JSONOUT_H

#include <string.h>

typedef struct {
    char *buf;
    Py_ssize_t len, cap;
    int ascii;
} Out;

static int
out_grow(Out *o, Py_ssize_t more)
{
    if (o->len + more <= o->cap)
        return 0;
    Py_ssize_t cap = o->cap ? o->cap : 4096;
    while (cap < o->len + more)
        cap *= 2;
    char *b = PyMem_Realloc(o->buf, (size_t)cap);
    if (b == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    o->buf = b;
    o->cap = cap;
    return 0;
}

/* n bytes from s to d: up to 32 (a line's literals and the text between its fields, nearly all) by a few
 * overlapping fixed-size moves, not a call to memcpy (a record line puts a dozen of them) */
static inline void
copy_text(char *d, const char *s, Py_ssize_t n)
{
    uint64_t a, b, c, e;
    if (n > 32) {
        memcpy(d, s, (size_t)n);
    } else if (n > 16) {
        memcpy(&a, s, 8), memcpy(&b, s + 8, 8), memcpy(&c, s + n - 16, 8), memcpy(&e, s + n - 8, 8);
        memcpy(d, &a, 8), memcpy(d + 8, &b, 8), memcpy(d + n - 16, &c, 8), memcpy(d + n - 8, &e, 8);
    } else if (n >= 8) {
        memcpy(&a, s, 8), memcpy(&b, s + n - 8, 8);
        memcpy(d, &a, 8), memcpy(d + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t x, y;
        memcpy(&x, s, 4), memcpy(&y, s + n - 4, 4);
        memcpy(d, &x, 4), memcpy(d + n - 4, &y, 4);
    } else if (n > 0) {
        char x = s[0], y = s[n / 2], z = s[n - 1];
        d[0] = x, d[n / 2] = y, d[n - 1] = z;
    }
}

static inline int
out_put(Out *o, const char *s, Py_ssize_t n)
{
    if (out_grow(o, n) < 0)
        return -1;
    copy_text(o->buf + o->len, s, n);
    o->len += n;
    return 0;
}

#define PUT_LIT(o, s) out_put((o), (s), (Py_ssize_t)(sizeof(s) - 1))

/* the text written, as a str; the buffer freed */
static PyObject *
out_finish(Out *o)
{
    PyObject *s;
    if (o->ascii) {
        s = PyUnicode_New(o->len, 127);
        if (s != NULL && o->len)
            memcpy(PyUnicode_1BYTE_DATA(s), o->buf, (size_t)o->len);
    } else
        s = PyUnicode_DecodeUTF8(o->buf, o->len, NULL);
    PyMem_Free(o->buf);
    o->buf = NULL;
    return s;
}

/* what a writer returns for its status ``rc``: the text written (0), None (1: hand back) or NULL
 * (-1: an exception is set); the buffer freed */
static PyObject *
out_result(Out *o, int rc)
{
    if (rc == 0)
        return out_finish(o);
    PyMem_Free(o->buf);
    o->buf = NULL;
    if (rc < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* a str, as its UTF-8 */
static int
out_str(Out *o, PyObject *s)
{
    Py_ssize_t n;
    const char *u = PyUnicode_AsUTF8AndSize(s, &n);
    if (u == NULL)
        return -1;
    if (!PyUnicode_IS_ASCII(s))
        o->ascii = 0;
    return out_put(o, u, n);
}

static inline int
out_i64(Out *o, int64_t x)
{
    char tmp[24];
    char *e = tmp + sizeof tmp, *p = e;
    uint64_t u = x < 0 ? 0ull - (uint64_t)x : (uint64_t)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--p = '-';
    return out_put(o, p, e - p);
}

#endif
