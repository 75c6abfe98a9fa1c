/* kafkadump.accel.arrowcols: a plain v2 batch's records as Arrow column buffers, straight from
 * the batch's bytes (the Spark data source's fast path: no Python object per record).
 *
 * The pure-Python code is the reference: the record fields here are those of
 * decode.batch.decode_record_run (and of recordloop.c's record loop) for a plain run,
 * and anything else is handed back (None, the buffers left as they were): a
 * malformed record, trailing bytes, an integer past 64 bits, a header key that
 * is not UTF-8 (Python shows it with backslash escapes), a column past 2 GiB.
 * The caller then builds those rows from the decoder's Record objects.
 *
 *   record_columns(data, pos, end, n, stop_n, count, base_offset, base_ts, max_ts, log_append,
 *                  batch_position, flags, ts_min, ts_max, bufs)
 *       appends records n .. stop_n-1 of the run at data[pos:end] to ``bufs`` (a list of
 *       NBUFS bytearrays, see the B_* indexes below; an offsets buffer starts with one 0);
 *       None, or (next position, next record number, done).  The timestamp is there twice:
 *       epoch ms, and microseconds, null outside [ts_min, ts_max] ms (a Spark TimestampType).
 *
 * The layout is Arrow's: little-endian fixed-width values, int32 offsets, validity
 * bitmaps with bit i for row i (1: not null).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

enum {
    B_OFFSET, B_TIMESTAMP, B_OFFSET_DELTA, B_TIMESTAMP_DELTA, B_BATCH_POSITION, B_LOG_APPEND,
    B_KEY_OFFSETS, B_KEY_DATA, B_KEY_VALID,
    B_VALUE_OFFSETS, B_VALUE_DATA, B_VALUE_VALID,
    B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HKEY_DATA, B_HVALUE_OFFSETS, B_HVALUE_DATA, B_HVALUE_VALID,
    B_TIMESTAMP_US, B_TIMESTAMP_VALID,
    NBUFS
};

/* flags: which variable-width columns to fill (the fixed-width ones always are) */
#define F_KEY 1
#define F_VALUE 2
#define F_HEADERS 4
#define F_TIMESTAMP 8   /* the microseconds column */

#include "varint.h"

/* Strict UTF-8 (what Python's decoder accepts without an error handler): 1, else 0. */
static int
utf8_valid(const unsigned char *s, Py_ssize_t n)
{
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int len;
        uint32_t cp, min;
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2; cp = c & 0x1F; min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3; cp = c & 0x0F; min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4; cp = c & 0x07; min = 0x10000;
        } else
            return 0;
        if (n - i < len)
            return 0;
        for (int k = 1; k < len; k++) {
            unsigned t = s[i + k];
            if ((t & 0xC0) != 0x80)
                return 0;
            cp = (cp << 6) | (t & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return 0;
        i += len;
    }
    return 1;
}

/* One growable bytearray: where it started (for a hand back), its bytes, what is written. */
typedef struct {
    PyObject *ba;
    Py_ssize_t start, len, cap;
    char *p;
} Buf;

static int
buf_reserve(Buf *b, Py_ssize_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    Py_ssize_t want = b->len + more;
    Py_ssize_t cap = b->cap * 2 > want ? b->cap * 2 : want;
    if (PyByteArray_Resize(b->ba, cap) < 0)
        return -1;
    b->cap = cap;
    b->p = PyByteArray_AS_STRING(b->ba);
    return 0;
}

static inline void
put(Buf *b, const void *s, Py_ssize_t n)
{
    memcpy(b->p + b->len, s, (size_t)n);
    b->len += n;
}

static inline void
put_bit(Buf *b, int64_t i, int on)
{
    unsigned char *c = (unsigned char *)b->p + (i >> 3);
    if (on)
        *c |= (unsigned char)(1u << (i & 7));
    else
        *c &= (unsigned char)~(1u << (i & 7));
}

/* the last int32 of an offsets buffer (the end of the data so far) */
static inline int32_t
last_i32(const Buf *b)
{
    int32_t v;
    memcpy(&v, b->p + b->len - 4, 4);
    return v;
}

typedef struct {
    int64_t base_offset, base_ts, max_ts, batch_position, ts_min, ts_max;
    int log_append, flags;
} Consts;

/* Bytes and bits made room for, per record at most: the fixed-width values, an offset per
 * binary column; the data and header buffers get room for the whole run up front. */
static int
reserve_run(Buf *b, Py_ssize_t rows, Py_ssize_t bytes, int64_t row0, int64_t hdr0, int flags)
{
    static const int width[NBUFS] = {8, 8, 4, 8, 8, 1, 4, 0, 0, 4, 0, 0, 4, 4, 0, 4, 0, 0, 8, 0};
    Py_ssize_t bitmap_rows = (Py_ssize_t)((row0 + rows + 7) / 8) + 1;
    Py_ssize_t headers = bytes / 2 + 1;
    for (int i = 0; i < NBUFS; i++) {
        if (i >= B_KEY_OFFSETS && i < B_VALUE_OFFSETS && !(flags & F_KEY))
            continue;
        if (i >= B_VALUE_OFFSETS && i < B_HEADER_OFFSETS && !(flags & F_VALUE))
            continue;
        if (i >= B_HEADER_OFFSETS && i < B_TIMESTAMP_US && !(flags & F_HEADERS))
            continue;
        if (i >= B_TIMESTAMP_US && !(flags & F_TIMESTAMP))
            continue;
        Py_ssize_t more;
        if (i == B_KEY_VALID || i == B_VALUE_VALID || i == B_TIMESTAMP_VALID)
            more = bitmap_rows - b[i].len;
        else if (i == B_HVALUE_VALID)
            more = (Py_ssize_t)((hdr0 + headers + 7) / 8) + 1 - b[i].len;
        else if (i == B_KEY_DATA || i == B_VALUE_DATA || i == B_HKEY_DATA || i == B_HVALUE_DATA)
            more = bytes;
        else if (i == B_HKEY_OFFSETS || i == B_HVALUE_OFFSETS)
            more = headers * 4;
        else
            more = rows * width[i];
        if (more > 0 && buf_reserve(&b[i], more) < 0)
            return -1;
    }
    return 0;
}

/* One record at d[start:end] appended to the buffers: 0; 1: not plain (hand back). */
static int
add_one(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, const Consts *k, Buf *b, int64_t row,
        int64_t *hdr, Py_ssize_t *next)
{
    Py_ssize_t pos = start;
    int64_t length, ts_delta, off_delta, klen, vlen, hcount, offset, timestamp;
    if (read_varint(d, &pos, end, 5, &length) < 0)
        return 1;
    Py_ssize_t rend = pos + (Py_ssize_t)length;
    if (length < 6 || rend > end)
        return 1;
    pos++;  /* attributes */
    if (read_varint(d, &pos, rend, 10, &ts_delta) < 0 || read_varint(d, &pos, rend, 5, &off_delta) < 0
        || read_varint(d, &pos, rend, 5, &klen) < 0)
        return 1;
    Py_ssize_t p_key = pos;
    if (klen >= 0) {
        if (klen > rend - pos)
            return 1;
        pos += (Py_ssize_t)klen;
    } else if (klen != -1)
        return 1;
    if (read_varint(d, &pos, rend, 5, &vlen) < 0)
        return 1;
    Py_ssize_t p_val = pos;
    if (vlen >= 0) {
        if (vlen > rend - pos)
            return 1;
        pos += (Py_ssize_t)vlen;
    } else if (vlen != -1)
        return 1;
    if (read_varint(d, &pos, rend, 5, &hcount) < 0 || hcount < 0 || hcount > (rend - pos) / 2)
        return 1;
    int want_h = k->flags & F_HEADERS;
    for (int64_t i = 0; i < hcount; i++) {
        int64_t hk, hv;
        if (read_varint(d, &pos, rend, 5, &hk) < 0 || hk < 0 || hk > rend - pos)
            return 1;
        Py_ssize_t p_hk = pos;
        pos += (Py_ssize_t)hk;
        if (read_varint(d, &pos, rend, 5, &hv) < 0)
            return 1;
        Py_ssize_t p_hv = pos;
        if (hv >= 0) {
            if (hv > rend - pos)
                return 1;
            pos += (Py_ssize_t)hv;
        } else if (hv != -1)
            return 1;
        if (!want_h)
            continue;
        if (!utf8_valid(d + p_hk, (Py_ssize_t)hk))
            return 1;
        int32_t ko = last_i32(&b[B_HKEY_OFFSETS]), vo = last_i32(&b[B_HVALUE_OFFSETS]);
        if (hk > INT32_MAX - ko || (hv > 0 && hv > INT32_MAX - vo))
            return 1;
        put(&b[B_HKEY_DATA], d + p_hk, (Py_ssize_t)hk);
        ko += (int32_t)hk;
        put(&b[B_HKEY_OFFSETS], &ko, 4);
        if (hv > 0) {
            put(&b[B_HVALUE_DATA], d + p_hv, (Py_ssize_t)hv);
            vo += (int32_t)hv;
        }
        put(&b[B_HVALUE_OFFSETS], &vo, 4);
        put_bit(&b[B_HVALUE_VALID], *hdr, hv >= 0);
        (*hdr)++;
    }
    if (pos != rend)
        return 1;
    if (__builtin_add_overflow(k->base_offset, off_delta, &offset))
        return 1;
    if (k->log_append)
        timestamp = k->max_ts;
    else if (__builtin_add_overflow(k->base_ts, ts_delta, &timestamp))
        return 1;
    if (want_h) {
        int32_t h = last_i32(&b[B_HEADER_OFFSETS]);
        if (hcount > INT32_MAX - h)
            return 1;
        h += (int32_t)hcount;
        put(&b[B_HEADER_OFFSETS], &h, 4);
    }
    if (k->flags & F_KEY) {
        int32_t o = last_i32(&b[B_KEY_OFFSETS]);
        if (klen > INT32_MAX - o)
            return 1;
        if (klen > 0) {
            put(&b[B_KEY_DATA], d + p_key, (Py_ssize_t)klen);
            o += (int32_t)klen;
        }
        put(&b[B_KEY_OFFSETS], &o, 4);
        put_bit(&b[B_KEY_VALID], row, klen >= 0);
    }
    if (k->flags & F_VALUE) {
        int32_t o = last_i32(&b[B_VALUE_OFFSETS]);
        if (vlen > INT32_MAX - o)
            return 1;
        if (vlen > 0) {
            put(&b[B_VALUE_DATA], d + p_val, (Py_ssize_t)vlen);
            o += (int32_t)vlen;
        }
        put(&b[B_VALUE_OFFSETS], &o, 4);
        put_bit(&b[B_VALUE_VALID], row, vlen >= 0);
    }
    int32_t od32 = (int32_t)off_delta;
    unsigned char la = (unsigned char)k->log_append;
    put(&b[B_OFFSET], &offset, 8);
    put(&b[B_TIMESTAMP], &timestamp, 8);
    put(&b[B_OFFSET_DELTA], &od32, 4);
    put(&b[B_TIMESTAMP_DELTA], &ts_delta, 8);
    put(&b[B_BATCH_POSITION], &k->batch_position, 8);
    put(&b[B_LOG_APPEND], &la, 1);
    if (k->flags & F_TIMESTAMP) {
        int in_range = timestamp >= k->ts_min && timestamp <= k->ts_max;
        int64_t us = in_range ? timestamp * 1000 : 0;   /* ts_min and ts_max keep this in 64 bits */
        put(&b[B_TIMESTAMP_US], &us, 8);
        put_bit(&b[B_TIMESTAMP_VALID], row, in_range);
    }
    *next = rend;
    return 0;
}

static PyObject *
record_columns(PyObject *self, PyObject *args)
{
    PyObject *data, *bufs;
    Py_ssize_t pos, end, n, stop_n, count;
    long long base_offset, base_ts, max_ts, batch_position, ts_min, ts_max;
    int log_append, flags;
    if (!PyArg_ParseTuple(args, "OnnnnnLLLpLiLLO!", &data, &pos, &end, &n, &stop_n, &count, &base_offset, &base_ts,
                          &max_ts, &log_append, &batch_position, &flags, &ts_min, &ts_max, &PyList_Type, &bufs)) {
        if (PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        return NULL;
    }
    if (PyList_GET_SIZE(bufs) != NBUFS) {
        PyErr_SetString(PyExc_ValueError, "record_columns() takes a list of its buffers");
        return NULL;
    }
    Buf b[NBUFS];
    for (int i = 0; i < NBUFS; i++) {
        PyObject *ba = PyList_GET_ITEM(bufs, i);
        if (!PyByteArray_CheckExact(ba)) {
            PyErr_SetString(PyExc_TypeError, "record_columns() buffers are bytearrays");
            return NULL;
        }
        b[i].ba = ba;
        b[i].start = b[i].len = b[i].cap = PyByteArray_GET_SIZE(ba);
        b[i].p = PyByteArray_AS_STRING(ba);
    }
    int offsets[] = {B_KEY_OFFSETS, B_VALUE_OFFSETS, B_HEADER_OFFSETS, B_HKEY_OFFSETS, B_HVALUE_OFFSETS};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        if (b[offsets[i]].len < 4) {
            PyErr_SetString(PyExc_ValueError, "record_columns(): an offsets buffer starts with a 0");
            return NULL;
        }
    }
    /* a bitmap's last byte holds bits of the rows before this run: kept for a hand back */
    int bitmaps[] = {B_KEY_VALID, B_VALUE_VALID, B_HVALUE_VALID, B_TIMESTAMP_VALID};
    unsigned char last_bits[4] = {0, 0, 0, 0};
    for (int i = 0; i < 4; i++) {
        if (b[bitmaps[i]].len > 0)
            last_bits[i] = (unsigned char)b[bitmaps[i]].p[b[bitmaps[i]].len - 1];
    }
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *d = (const unsigned char *)view.buf;
    int done = 1;
    if (end > view.len || pos < 0 || pos > end || n < 0 || stop_n < n)
        goto hand_back;
    if ((flags & F_TIMESTAMP) && (ts_min < INT64_MIN / 1000 || ts_max > INT64_MAX / 1000))
        goto hand_back;
    Consts k = {base_offset, base_ts, max_ts, batch_position, ts_min, ts_max, log_append, flags};
    int64_t row = b[B_OFFSET].len / 8;
    int64_t hdr = (b[B_HKEY_OFFSETS].len / 4) - 1;
    Py_ssize_t rows_max = (end - pos) / 7 + 1;   /* a record takes 7 bytes at least */
    if (stop_n - n < rows_max)
        rows_max = stop_n - n;
    if (reserve_run(b, rows_max, end - pos, row, hdr, flags) < 0)
        goto error;
    while (pos < end) {
        if (n >= stop_n) {
            if (n < count) {
                done = 0;
                break;
            }
            goto hand_back;  /* trailing bytes: a finding */
        }
        Py_ssize_t next;
        if (add_one(d, pos, end, &k, b, row, &hdr, &next))
            goto hand_back;
        row++;
        pos = next;
        n++;
    }
    PyBuffer_Release(&view);
    if (flags & F_KEY)
        b[B_KEY_VALID].len = (Py_ssize_t)((row + 7) / 8);
    if (flags & F_VALUE)
        b[B_VALUE_VALID].len = (Py_ssize_t)((row + 7) / 8);
    if (flags & F_HEADERS)
        b[B_HVALUE_VALID].len = (Py_ssize_t)((hdr + 7) / 8);
    if (flags & F_TIMESTAMP)
        b[B_TIMESTAMP_VALID].len = (Py_ssize_t)((row + 7) / 8);
    for (int i = 0; i < NBUFS; i++) {
        if (b[i].len != b[i].cap && PyByteArray_Resize(b[i].ba, b[i].len) < 0)
            return NULL;
    }
    return Py_BuildValue("(nnO)", pos, n, done ? Py_True : Py_False);
hand_back:
    PyBuffer_Release(&view);
    for (int i = 0; i < NBUFS; i++) {
        if (b[i].cap != b[i].start && PyByteArray_Resize(b[i].ba, b[i].start) < 0)
            return NULL;
    }
    for (int i = 0; i < 4; i++) {
        if (b[bitmaps[i]].start > 0)
            PyByteArray_AS_STRING(b[bitmaps[i]].ba)[b[bitmaps[i]].start - 1] = (char)last_bits[i];
    }
    Py_RETURN_NONE;
error:
    PyBuffer_Release(&view);
    for (int i = 0; i < NBUFS; i++) {
        if (b[i].cap != b[i].start)
            PyByteArray_Resize(b[i].ba, b[i].start);
    }
    return NULL;
}

static PyMethodDef methods[] = {
    {"record_columns", record_columns, METH_VARARGS,
     "Append a plain run's records to Arrow column buffers (None: hand back, nothing appended)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.arrowcols",
    "A plain v2 batch's records as Arrow column buffers (the pure-Python code is the reference).", -1, methods,
};

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define ARROWCOLS_INTERFACE 1

PyMODINIT_FUNC
PyInit_arrowcols(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", ARROWCOLS_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
