/* kafkadump.accel.hotloops: the compiled twin of kafkadump's hot loops.
 *
 * The pure-Python code is the reference; every function here computes exactly
 * what its Python twin computes for the plain case and hands anything else
 * back (returns None): the caller then runs the Python code, which produces
 * the findings.  So a damaged record, trailing bytes, an integer that does not
 * fit 64 bits or an object of an unexpected type never reach a finding from C.
 *
 *   configure(Record)                       Record's slot offsets (records are built without __init__)
 *   configure_batch(Batch)                  Batch's slot offsets (batch_hop fills them, batch_json reads them)
 *   record_run(data, pos, end, n, stop_n, count, base_offset, base_ts, max_ts, log_append,
 *              ts_type, source, shift, last_offset_delta)
 *       twin of decode.batch.decode_record_run for a non-control batch without spans:
 *       None, or (records, pos, n, done, ordered, top)
 *   format_lines(records, prefix, mid_ts, tail, mode, val_json, dumps)   (tail ends with ,"keyPayload":)
 *       twin of render.jsonl.RecordLines.batch_lines' loop: None, or the lines as one str
 *   batch_hop(buf, pos, end, max_length, copy_max, crc32c, file, position)     (after configure_batch)
 *       the part of decode.step.decode_at that judges an intact, uncompressed, non-control v2 batch
 *       with a sane header: None, or (its Batch as decode_batch_header makes it, its CRC-32C set;
 *       a copy of its bytes)
 *   crc_hop(buf, pos, end, until, max_length, crc32c=None)
 *       twin of decode.walk.CrcScan's loop over intact v2 batches starting before ``until``, CRC-32C
 *       by crc32c.h with the GIL released (or, given, by the crc32c function: where crc32c.h has only
 *       its tables, slower than the package's own hardware code): (pos, batches, bytes): where it
 *       stopped (at ``until``, or at a batch that is not intact and plainly framed: the caller's Python
 *       loop judges that one); None for positions outside buf
 *   crc32c(data, value=0, code=None)        the crc32c package's crc32c(data, value), by crc32c.h's
 *       code for this CPU, or by the one named (one of crc32c_codes(): for the tests)
 *   crc32c_codes()                          the names of crc32c.h's codes this CPU runs, the one in use
 *       first: ("sse4.2+pclmul", "sse4.2", "table") on most x86-64, ("table",) elsewhere
 *   batch_json(batch, file_json)            (after configure_batch(Batch))
 *       twin of render.jsonl.batch_line for a v2 batch without findings: None, or its line
 *
 * Every loop over a buffer starts with open_run (its arguments, a view of the buffer, the bounds).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <stdarg.h>
#include <string.h>

/* ---- Record's slots ------------------------------------------------------------------------- */

enum {
    R_OFFSET, R_TIMESTAMP, R_TIMESTAMP_TYPE, R_KEY, R_VALUE, R_HEADERS, R_OFFSET_DELTA,
    R_TIMESTAMP_DELTA, R_ATTRIBUTES, R_POSITION, R_SIZE, R_SOURCE, R_CONTROL, R_MAGIC, R_CRC,
    R_COMPUTED_CRC, R_STORED_OFFSET, R_KEY_POSITION, R_VALUE_POSITION, R_NSLOTS
};

static const char *const SLOT_NAMES[R_NSLOTS] = {
    "offset", "timestamp", "timestamp_type", "key", "value", "headers", "offset_delta",
    "timestamp_delta", "attributes", "position", "size", "source", "control", "magic", "crc",
    "computed_crc", "stored_offset", "key_position", "value_position",
};

static Py_ssize_t slot_offset[R_NSLOTS];
static PyTypeObject *record_type = NULL;

#define SLOT(obj, i) (*(PyObject **)((char *)(obj) + slot_offset[i]))

/* ---- Batch's slots (decode.model.Batch, for its JSON line) ------------------------------------ */

enum {
    B_FILE, B_POSITION, B_SIZE, B_MAGIC, B_BASE_OFFSET, B_BATCH_LENGTH, B_LEADER_EPOCH, B_CRC,
    B_COMPUTED_CRC, B_ATTRIBUTES, B_LAST_OFFSET_DELTA, B_BASE_TIMESTAMP, B_MAX_TIMESTAMP, B_PRODUCER_ID,
    B_PRODUCER_EPOCH, B_BASE_SEQUENCE, B_RECORD_COUNT, B_FINDINGS, B_DECOMPRESSED_SIZE,
    /* the slots a v2 batch leaves None when its header is decoded */
    B_RECORDS, B_OFFSET, B_MESSAGE_SIZE, B_TIMESTAMP, B_KEY, B_LAST_OFFSET_OVERRIDE, B_SPANS, B_DECOMPRESSED,
    B_NSLOTS
};

static const char *const BATCH_SLOT_NAMES[B_NSLOTS] = {
    "file", "position", "size", "magic", "base_offset", "batch_length", "partition_leader_epoch", "crc",
    "computed_crc", "attributes", "last_offset_delta", "base_timestamp", "max_timestamp", "producer_id",
    "producer_epoch", "base_sequence", "record_count", "findings", "decompressed_size",
    "records", "offset", "message_size", "timestamp", "key", "last_offset_override", "spans", "decompressed",
};

static Py_ssize_t batch_slot_offset[B_NSLOTS];
static PyTypeObject *batch_type = NULL;

#define BSLOT(obj, i) (*(PyObject **)((char *)(obj) + batch_slot_offset[i]))

/* The slot offsets of ``cls`` (a class with __slots__ only) for ``names``: 0, or -1 with TypeError set. */
static int
slots_of(PyObject *cls, const char *const *names, int n, Py_ssize_t *offsets)
{
    if (!PyType_Check(cls)) {
        PyErr_SetString(PyExc_TypeError, "configure() takes a class");
        return -1;
    }
    PyTypeObject *tp = (PyTypeObject *)cls;
    if (tp->tp_dictoffset != 0 || tp->tp_itemsize != 0) {
        PyErr_SetString(PyExc_TypeError, "the class must have __slots__ only");
        return -1;
    }
    for (int i = 0; i < n; i++) {
        PyObject *descr = PyObject_GetAttrString(cls, names[i]);
        if (descr == NULL) {
            if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                return -1;
            PyErr_Clear();  /* a class without the slot: a TypeError, below */
        }
        int ok = descr != NULL && Py_IS_TYPE(descr, &PyMemberDescr_Type);
        if (ok) {
            PyMemberDef *m = ((PyMemberDescrObject *)descr)->d_member;
            ok = m->type == T_OBJECT_EX && !(m->flags & READONLY)
                 && m->offset > 0 && m->offset + (Py_ssize_t)sizeof(PyObject *) <= tp->tp_basicsize;
            offsets[i] = m->offset;
        }
        Py_XDECREF(descr);
        if (!ok) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a plain slot", tp->tp_name, names[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *
configure(PyObject *self, PyObject *cls)
{
    Py_ssize_t offsets[R_NSLOTS];  /* the class in use keeps its offsets unless this one is good */
    if (slots_of(cls, SLOT_NAMES, R_NSLOTS, offsets) < 0)
        return NULL;
    memcpy(slot_offset, offsets, sizeof offsets);
    Py_INCREF(cls);
    Py_XSETREF(record_type, (PyTypeObject *)cls);
    Py_RETURN_NONE;
}

static PyObject *
configure_batch(PyObject *self, PyObject *cls)
{
    Py_ssize_t offsets[B_NSLOTS];
    if (slots_of(cls, BATCH_SLOT_NAMES, B_NSLOTS, offsets) < 0)
        return NULL;
    /* batch_hop makes batches: every slot must be one it fills */
    if (((PyTypeObject *)cls)->tp_basicsize != (Py_ssize_t)(sizeof(PyObject) + B_NSLOTS * sizeof(PyObject *))) {
        PyErr_SetString(PyExc_TypeError, "the batch class has slots the compiled loops do not know");
        return NULL;
    }
    memcpy(batch_slot_offset, offsets, sizeof offsets);
    Py_INCREF(cls);
    Py_XSETREF(batch_type, (PyTypeObject *)cls);
    Py_RETURN_NONE;
}

/* ---- the record loop --------------------------------------------------------------------------- */

#include "varint.h"
#include "crc32c.h"

/* raised when a function's arguments or results change (accel/__init__.py's INTERFACE must match) */
#define HOTLOOPS_INTERFACE 2

typedef struct {
    PyObject *ts_type, *source, *zero_magic;
    int64_t base_offset, base_ts, max_ts;
    int log_append;
    Py_ssize_t shift;
} RunConsts;

/* The fields of one record, as parse_one found them. */
typedef struct {
    Py_ssize_t start, rend, p_key, p_val, hstart;
    int64_t ts_delta, off_delta, klen, vlen, hcount, offset, timestamp;
    unsigned attributes;
} Fields;

/* One record at d[start:end], checked in full: 0, or -1 for anything not plain (hand back). */
static int
parse_one(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, const RunConsts *k, Fields *f)
{
    Py_ssize_t pos = start;
    int64_t length;
    f->start = start;
    if (read_varint(d, &pos, end, 5, &length) < 0)
        return -1;
    Py_ssize_t rend = pos + (Py_ssize_t)length;
    if (length < 6 || rend > end)
        return -1;
    f->rend = rend;
    f->attributes = d[pos++];
    if (read_varint(d, &pos, rend, 10, &f->ts_delta) < 0 || read_varint(d, &pos, rend, 5, &f->off_delta) < 0
        || read_varint(d, &pos, rend, 5, &f->klen) < 0)
        return -1;
    f->p_key = pos;
    if (f->klen >= 0) {
        if (f->klen > rend - pos)
            return -1;
        pos += (Py_ssize_t)f->klen;
    } else if (f->klen != -1)
        return -1;
    if (read_varint(d, &pos, rend, 5, &f->vlen) < 0)
        return -1;
    f->p_val = pos;
    if (f->vlen >= 0) {
        if (f->vlen > rend - pos)
            return -1;
        pos += (Py_ssize_t)f->vlen;
    } else if (f->vlen != -1)
        return -1;
    if (read_varint(d, &pos, rend, 5, &f->hcount) < 0)
        return -1;
    if (f->hcount < 0 || f->hcount > (rend - pos) / 2)
        return -1;
    f->hstart = pos;
    for (int64_t i = 0; i < f->hcount; i++) {
        int64_t hk, hv;
        if (read_varint(d, &pos, rend, 5, &hk) < 0 || hk < 0 || hk > rend - pos)
            return -1;
        pos += (Py_ssize_t)hk;
        if (read_varint(d, &pos, rend, 5, &hv) < 0)
            return -1;
        if (hv >= 0) {
            if (hv > rend - pos)
                return -1;
            pos += (Py_ssize_t)hv;
        } else if (hv != -1)
            return -1;
    }
    if (pos != rend)
        return -1;
    if (__builtin_add_overflow(k->base_offset, f->off_delta, &f->offset))
        return -1;
    if (k->log_append)
        f->timestamp = k->max_ts;
    else if (__builtin_add_overflow(k->base_ts, f->ts_delta, &f->timestamp))
        return -1;
    return 0;
}

/* One record at d[start:end]: a new Record, NULL with an exception set, or NULL without one (hand back). */
static PyObject *
decode_one(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, const RunConsts *k,
           Py_ssize_t *next, int64_t *od_out, int64_t *ts_out)
{
    Fields f;
    if (parse_one(d, start, end, k, &f) < 0)
        return NULL;
    Py_ssize_t rend = f.rend, p_key = f.p_key, p_val = f.p_val, pos;
    int64_t hcount = f.hcount, klen = f.klen, vlen = f.vlen, off_delta = f.off_delta, ts_delta = f.ts_delta;
    int64_t offset = f.offset, timestamp = f.timestamp;
    unsigned attributes = f.attributes;
    PyObject *headers = PyList_New((Py_ssize_t)hcount);
    if (headers == NULL)
        return NULL;
    pos = f.hstart;
    for (int64_t i = 0; i < hcount; i++) {
        int64_t hk = 0, hv = -1;  /* both read above already: these reads cannot fail */
        read_varint(d, &pos, rend, 5, &hk);
        PyObject *hkey = PyUnicode_DecodeUTF8((const char *)d + pos, (Py_ssize_t)hk, "backslashreplace");
        pos += (Py_ssize_t)hk;
        read_varint(d, &pos, rend, 5, &hv);
        PyObject *hval;
        if (hv >= 0) {
            hval = PyBytes_FromStringAndSize((const char *)d + pos, (Py_ssize_t)hv);
            pos += (Py_ssize_t)hv;
        } else {
            hval = Py_None;
            Py_INCREF(hval);
        }
        PyObject *pair = (hkey && hval) ? PyTuple_Pack(2, hkey, hval) : NULL;
        Py_XDECREF(hkey);
        Py_XDECREF(hval);
        if (pair == NULL) {
            Py_DECREF(headers);
            return NULL;
        }
        PyList_SET_ITEM(headers, (Py_ssize_t)i, pair);
    }

    PyObject *rec = record_type->tp_alloc(record_type, 0);
    if (rec == NULL) {
        Py_DECREF(headers);
        return NULL;
    }
    Py_INCREF(Py_None); SLOT(rec, R_CONTROL) = Py_None;
    Py_INCREF(Py_None); SLOT(rec, R_CRC) = Py_None;
    Py_INCREF(Py_None); SLOT(rec, R_COMPUTED_CRC) = Py_None;
    Py_INCREF(Py_None); SLOT(rec, R_STORED_OFFSET) = Py_None;
    Py_INCREF(k->ts_type); SLOT(rec, R_TIMESTAMP_TYPE) = k->ts_type;
    Py_INCREF(k->source); SLOT(rec, R_SOURCE) = k->source;
    Py_INCREF(k->zero_magic); SLOT(rec, R_MAGIC) = k->zero_magic;
    SLOT(rec, R_HEADERS) = headers;
    if (klen >= 0)
        SLOT(rec, R_KEY) = PyBytes_FromStringAndSize((const char *)d + p_key, (Py_ssize_t)klen);
    else {
        Py_INCREF(Py_None);
        SLOT(rec, R_KEY) = Py_None;
    }
    if (vlen >= 0)
        SLOT(rec, R_VALUE) = PyBytes_FromStringAndSize((const char *)d + p_val, (Py_ssize_t)vlen);
    else {
        Py_INCREF(Py_None);
        SLOT(rec, R_VALUE) = Py_None;
    }
    SLOT(rec, R_OFFSET) = PyLong_FromLongLong(offset);
    SLOT(rec, R_TIMESTAMP) = PyLong_FromLongLong(timestamp);
    SLOT(rec, R_OFFSET_DELTA) = PyLong_FromLongLong(off_delta);
    SLOT(rec, R_TIMESTAMP_DELTA) = PyLong_FromLongLong(ts_delta);
    SLOT(rec, R_ATTRIBUTES) = PyLong_FromLong((long)attributes);
    SLOT(rec, R_POSITION) = PyLong_FromSsize_t(k->shift + start);
    SLOT(rec, R_SIZE) = PyLong_FromSsize_t(rend - start);
    SLOT(rec, R_KEY_POSITION) = PyLong_FromSsize_t(k->shift + p_key);
    SLOT(rec, R_VALUE_POSITION) = PyLong_FromSsize_t(k->shift + p_val);
    for (int i = 0; i < R_NSLOTS; i++) {
        if (SLOT(rec, i) == NULL) {  /* an allocation failed: the exception is set */
            Py_DECREF(rec);
            return NULL;
        }
    }
    *next = rend;
    *od_out = off_delta;
    *ts_out = timestamp;
    return rec;
}

/* ---- the start of every loop over a buffer ---------------------------------------------------- */

/* Parse a loop's ``args`` by ``fmt``, which starts with "Onn" (the buffer, pos, end: their pointers
 * come first among the ``...``), and hold a view of the buffer.  1: go on (0 <= pos <= end <= the
 * buffer's length; release ``view`` when done); 0: hand back (an argument past 64 bits, which a header
 * value cannot be, or pos..end not inside the buffer; nothing held); -1: an exception is set. */
static int
open_run(PyObject *args, const char *fmt, Py_buffer *view, ...)
{
    va_list rest, first;
    va_start(rest, view);
    va_copy(first, rest);
    int parsed = PyArg_VaParse(args, fmt, rest);
    va_end(rest);
    PyObject **data = va_arg(first, PyObject **);
    Py_ssize_t *pos = va_arg(first, Py_ssize_t *), *end = va_arg(first, Py_ssize_t *);
    va_end(first);
    if (!parsed) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (PyObject_GetBuffer(*data, view, PyBUF_SIMPLE) < 0)
        return -1;
    if (*pos < 0 || *pos > *end || *end > view->len) {
        PyBuffer_Release(view);
        return 0;
    }
    return 1;
}

/* what a loop returns when open_run did not open it: NULL (an exception) or None (hand back) */
static PyObject *
not_opened(int opened)
{
    if (opened < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *
record_run(PyObject *self, PyObject *args)
{
    PyObject *data, *ts_type, *source;
    Py_ssize_t pos, end, n, stop_n, count, shift;
    long long base_offset, base_ts, max_ts, lod;
    int log_append;
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    Py_buffer view;
    int opened = open_run(args, "OnnnnnLLLpOOnL", &view, &data, &pos, &end, &n, &stop_n, &count, &base_offset,
                          &base_ts, &max_ts, &log_append, &ts_type, &source, &shift, &lod);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    RunConsts k = {ts_type, source, NULL, base_offset, base_ts, max_ts, log_append, shift};
    k.zero_magic = PyLong_FromLong(2);
    PyObject *out = PyList_New(0);
    if (out == NULL || k.zero_magic == NULL) {
        Py_XDECREF(out);
        Py_XDECREF(k.zero_magic);
        PyBuffer_Release(&view);
        return NULL;
    }
    int done = 1, ordered = 1, any = 0;
    int64_t prev = -1, top = 0;
    while (pos < end) {
        if (n >= stop_n) {
            if (n < count) {
                done = 0;
                break;
            }
            goto hand_back;  /* trailing bytes: a finding */
        }
        Py_ssize_t next;
        int64_t od, ts;
        PyObject *rec = decode_one(d, pos, end, &k, &next, &od, &ts);
        if (rec == NULL) {
            if (PyErr_Occurred())
                goto error;
            goto hand_back;
        }
        if (PyList_Append(out, rec) < 0) {
            Py_DECREF(rec);
            goto error;
        }
        Py_DECREF(rec);
        if (od <= prev || od > lod)
            ordered = 0;
        prev = od;
        if (!any || ts > top)
            top = ts;
        any = 1;
        pos = next;
        n++;
    }
    PyBuffer_Release(&view);
    Py_DECREF(k.zero_magic);
    PyObject *top_obj = any ? PyLong_FromLongLong(top) : (Py_INCREF(Py_None), Py_None);
    if (top_obj == NULL) {
        Py_DECREF(out);
        return NULL;
    }
    return Py_BuildValue("(NnnOON)", out, pos, n, done ? Py_True : Py_False, ordered ? Py_True : Py_False,
                         top_obj);
hand_back:
    PyBuffer_Release(&view);
    Py_DECREF(k.zero_magic);
    Py_DECREF(out);
    Py_RETURN_NONE;
error:
    PyBuffer_Release(&view);
    Py_DECREF(k.zero_magic);
    Py_DECREF(out);
    return NULL;
}

/* ---- JSON Lines --------------------------------------------------------------------------------- */

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

static inline int
out_put(Out *o, const char *s, Py_ssize_t n)
{
    if (out_grow(o, n) < 0)
        return -1;
    memcpy(o->buf + o->len, s, (size_t)n);
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

/* an exact int that fits 64 bits, in decimal; 1 when it is not one (hand back) */
static int
out_int(Out *o, PyObject *v)
{
    if (!PyLong_CheckExact(v))
        return 1;
    int overflow;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        return 1;
    if (x == -1 && PyErr_Occurred())
        return -1;
    char tmp[24];
    char *e = tmp + sizeof tmp, *p = e;
    unsigned long long u = x < 0 ? 0ull - (unsigned long long)x : (unsigned long long)x;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    if (x < 0)
        *--p = '-';
    return out_put(o, p, e - p);
}

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char HEX[] = "0123456789abcdef";

static int
out_base64(Out *o, const unsigned char *s, Py_ssize_t n)
{
    if (out_grow(o, (n + 2) / 3 * 4 + 2) < 0)
        return -1;
    char *p = o->buf + o->len;
    *p++ = '"';
    Py_ssize_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8) | s[i + 2];
        p[0] = B64[v >> 18];
        p[1] = B64[(v >> 12) & 63];
        p[2] = B64[(v >> 6) & 63];
        p[3] = B64[v & 63];
        p += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)s[i] << 16;
        p[0] = B64[v >> 18];
        p[1] = B64[(v >> 12) & 63];
        p[2] = '=';
        p[3] = '=';
        p += 4;
    } else if (n - i == 2) {
        uint32_t v = ((uint32_t)s[i] << 16) | ((uint32_t)s[i + 1] << 8);
        p[0] = B64[v >> 18];
        p[1] = B64[(v >> 12) & 63];
        p[2] = B64[(v >> 6) & 63];
        p[3] = '=';
        p += 4;
    }
    *p++ = '"';
    o->len = p - o->buf;
    return 0;
}

static int
out_hex(Out *o, const unsigned char *s, Py_ssize_t n)
{
    if (out_grow(o, 2 * n + 2) < 0)
        return -1;
    char *p = o->buf + o->len;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        *p++ = HEX[s[i] >> 4];
        *p++ = HEX[s[i] & 15];
    }
    *p++ = '"';
    o->len = p - o->buf;
    return 0;
}

/* json.dumps (ensure_ascii) of ASCII text */
static int
out_json_ascii_chars(Out *o, const unsigned char *c, Py_ssize_t n)
{
    if (out_grow(o, 6 * n + 2) < 0)
        return -1;
    char *p = o->buf + o->len;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char ch = c[i];
        if (ch >= ' ' && ch <= '~' && ch != '\\' && ch != '"') {
            *p++ = (char)ch;
            continue;
        }
        *p++ = '\\';
        switch (ch) {
        case '\\': *p++ = '\\'; break;
        case '"': *p++ = '"'; break;
        case '\b': *p++ = 'b'; break;
        case '\f': *p++ = 'f'; break;
        case '\n': *p++ = 'n'; break;
        case '\r': *p++ = 'r'; break;
        case '\t': *p++ = 't'; break;
        default:
            *p++ = 'u';
            *p++ = '0';
            *p++ = '0';
            *p++ = HEX[ch >> 4];
            *p++ = HEX[ch & 15];
        }
    }
    *p++ = '"';
    o->len = p - o->buf;
    return 0;
}

/* The length of the valid UTF-8 sequence at s[i] (at most n - i bytes), its code point in *cp;
 * 0 when it is not one (as CPython's strict decoder judges: no overlong forms, no surrogates). */
static inline int
utf8_at(const unsigned char *s, Py_ssize_t i, Py_ssize_t n, uint32_t *cp)
{
    unsigned c = s[i];
    Py_ssize_t left = n - i;
    if (c >= 0xC2 && c <= 0xDF) {
        if (left < 2 || (s[i + 1] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x1Fu) << 6) | (s[i + 1] & 0x3Fu);
        return 2;
    }
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3)
            return 0;
        unsigned lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x0Fu) << 12) | ((s[i + 1] & 0x3Fu) << 6) | (s[i + 2] & 0x3Fu);
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4)
            return 0;
        unsigned lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
        if (s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80 || (s[i + 3] & 0xC0) != 0x80)
            return 0;
        *cp = ((c & 0x07u) << 18) | ((s[i + 1] & 0x3Fu) << 12) | ((s[i + 2] & 0x3Fu) << 6) | (s[i + 3] & 0x3Fu);
        return 4;
    }
    return 0;
}

/* render.jsontext's UNSAFE_CODEPOINTS that valid text without C0/C1 controls can hold */
static inline int
unsafe_codepoint(uint32_t cp)
{
    return cp == 0x061C || cp == 0x200E || cp == 0x200F || (cp >= 0x2028 && cp <= 0x202E)
           || (cp >= 0x2066 && cp <= 0x2069);
}

/* json.dumps (ensure_ascii) of an ASCII str */
static int
out_json_ascii_str(Out *o, PyObject *s)
{
    return out_json_ascii_chars(o, PyUnicode_1BYTE_DATA(s), PyUnicode_GET_LENGTH(s));
}

/* what an ASCII byte is to the auto encoding: 0 itself in JSON, its escape letter (", \\, tab, LF,
 * CR: text, escaped), or 1 (a control character: the bytes are not text); bytes >= 0x80: 2 */
static unsigned char AUTO_CLASS[256];

static void
init_auto_class(void)
{
    for (int c = 0; c < 256; c++)
        AUTO_CLASS[c] = c >= 0x80 ? 2 : (c < 0x20 || c == 0x7F) ? 1 : 0;
    AUTO_CLASS['"'] = '"';
    AUTO_CLASS['\\'] = '\\';
    AUTO_CLASS['\t'] = 't';
    AUTO_CLASS['\n'] = 'n';
    AUTO_CLASS['\r'] = 'r';
}

/* render.jsonl's _auto_json of s[:n] in one pass: the text as a JSON string (encode_basestring, then
 * jsontext.escape_unsafe) when report.records.as_text says it is text, else {"base64": ...} */
static int
out_auto(Out *o, const unsigned char *s, Py_ssize_t n)
{
    if (out_grow(o, 6 * n + 2) < 0)
        return -1;
    char *p = o->buf + o->len;
    int ascii = 1;
    *p++ = '"';
    for (Py_ssize_t i = 0; i < n;) {
        unsigned char c = s[i];
        unsigned char cls = AUTO_CLASS[c];
        if (cls == 0) {
            *p++ = (char)c;
            i++;
            continue;
        }
        if (cls > 2) {
            *p++ = '\\';
            *p++ = (char)cls;
            i++;
            continue;
        }
        if (cls == 1)
            goto not_text;
        uint32_t cp;
        int k = utf8_at(s, i, n, &cp);
        if (k == 0 || cp < 0xA0)  /* not UTF-8, or a C1 control */
            goto not_text;
        ascii = 0;
        if (unsafe_codepoint(cp)) {
            *p++ = '\\';
            *p++ = 'u';
            *p++ = HEX[(cp >> 12) & 15];
            *p++ = HEX[(cp >> 8) & 15];
            *p++ = HEX[(cp >> 4) & 15];
            *p++ = HEX[cp & 15];
        } else {
            memcpy(p, s + i, (size_t)k);
            p += k;
        }
        i += k;
    }
    *p++ = '"';
    o->len = p - o->buf;
    if (!ascii)
        o->ascii = 0;
    return 0;
not_text:
    if (PUT_LIT(o, "{\"base64\":") < 0 || out_base64(o, s, n) < 0)
        return -1;
    return PUT_LIT(o, "}");
}

enum { MODE_AUTO = 0, MODE_BASE64 = 1, MODE_HEX = 2, MODE_CALL = 3 };

/* result of a Python callable (a str), appended */
static int
out_call(Out *o, PyObject *fn, PyObject *arg)
{
    PyObject *r = PyObject_CallOneArg(fn, arg);
    if (r == NULL)
        return -1;
    if (!PyUnicode_CheckExact(r)) {
        Py_DECREF(r);
        return 1;
    }
    int rc = out_str(o, r);
    Py_DECREF(r);
    return rc;
}

/* a byte field s[:n] (``v``: the same as bytes, or NULL: made when needed) per mode */
static int
out_bytes(Out *o, const unsigned char *s, Py_ssize_t n, PyObject *v, int mode, PyObject *val_json)
{
    switch (mode) {
    case MODE_BASE64:
        return out_base64(o, s, n);
    case MODE_HEX:
        return out_hex(o, s, n);
    case MODE_AUTO:
        return out_auto(o, s, n);
    default:
        if (v != NULL)
            return out_call(o, val_json, v);
        PyObject *b = PyBytes_FromStringAndSize((const char *)s, n);
        if (b == NULL)
            return -1;
        int rc = out_call(o, val_json, b);
        Py_DECREF(b);
        return rc;
    }
}

/* a byte field (bytes or None) per mode; 1: hand back */
static int
out_field(Out *o, PyObject *v, int mode, PyObject *val_json)
{
    if (v == Py_None)
        return PUT_LIT(o, "null");
    if (!PyBytes_CheckExact(v))
        return 1;
    return out_bytes(o, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), v, mode, val_json);
}

/* ---- keyPayload / valuePayload: report.records.framing_object without headers naming a schema ---- */

static inline int out_i64(Out *o, int64_t x);

#define KEY_ID_HEADER "__key_schema_id"
#define VALUE_ID_HEADER "__value_schema_id"

/* whether a header name (n bytes) names a schema: the record is then handed back */
static inline int
schema_header_name(const char *k, Py_ssize_t n)
{
    return (n == (Py_ssize_t)sizeof(KEY_ID_HEADER) - 1 && memcmp(k, KEY_ID_HEADER, (size_t)n) == 0)
           || (n == (Py_ssize_t)sizeof(VALUE_ID_HEADER) - 1 && memcmp(k, VALUE_ID_HEADER, (size_t)n) == 0);
}

static int
out_headers(Out *o, PyObject *headers, int mode, PyObject *val_json, PyObject *dumps)
{
    if (!PyList_CheckExact(headers))
        return 1;
    Py_ssize_t n = PyList_GET_SIZE(headers);
    if (PUT_LIT(o, "[") < 0)
        return -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = PyList_GET_ITEM(headers, i);
        if (!PyTuple_CheckExact(h) || PyTuple_GET_SIZE(h) != 2)
            return 1;
        PyObject *k = PyTuple_GET_ITEM(h, 0), *v = PyTuple_GET_ITEM(h, 1);
        if (!PyUnicode_CheckExact(k))
            return 1;
        if (PyUnicode_IS_ASCII(k) && schema_header_name((const char *)PyUnicode_1BYTE_DATA(k), PyUnicode_GET_LENGTH(k)))
            return 1;  /* a header names the key's or value's schema: Python writes the framing */
        int rc;
        if ((rc = (i ? PUT_LIT(o, ",{\"key\":") : PUT_LIT(o, "{\"key\":"))) != 0)
            return rc;
        if (PyUnicode_IS_ASCII(k))
            rc = out_json_ascii_str(o, k);
        else
            rc = out_call(o, dumps, k);
        if (rc != 0)
            return rc;
        if ((rc = PUT_LIT(o, ",\"value\":")) != 0 || (rc = out_field(o, v, mode, val_json)) != 0)
            return rc;
        if ((rc = PUT_LIT(o, "}")) != 0)
            return rc;
    }
    return PUT_LIT(o, "]");
}

/* a key or value's framing object (s: NULL for null) */
static int
out_framing(Out *o, const unsigned char *s, Py_ssize_t n)
{
    if (s == NULL)
        return PUT_LIT(o, "null");
    if (n == 0 || s[0] != 0)
        return PUT_LIT(o, "{\"framing\":null}");
    if (n < 5)
        return PUT_LIT(o, "{\"framing\":\"confluent\",\"certain\":false,\"schemaId\":null,\"guid\":null}");
    int32_t sid = (int32_t)(((uint32_t)s[1] << 24) | ((uint32_t)s[2] << 16) | ((uint32_t)s[3] << 8) | (uint32_t)s[4]);
    if (sid < 0)   /* a registry never gives a negative id: not framed (framing.schema_framing) */
        return PUT_LIT(o, "{\"framing\":null}");
    int rc = sid > 0 ? PUT_LIT(o, "{\"framing\":\"confluent\",\"certain\":true,\"schemaId\":")
                     : PUT_LIT(o, "{\"framing\":\"confluent\",\"certain\":false,\"schemaId\":");
    if (rc != 0 || (rc = out_i64(o, sid)) != 0)
        return rc;
    return PUT_LIT(o, ",\"guid\":null}");
}

/* the payload fields after ``tail`` (which ends with ``,"keyPayload":``), and the line's end */
static int
out_payloads(Out *o, const unsigned char *k, Py_ssize_t kn, const unsigned char *v, Py_ssize_t vn)
{
    int rc;
    if ((rc = out_framing(o, k, kn)) != 0 || (rc = PUT_LIT(o, ",\"valuePayload\":")) != 0
        || (rc = out_framing(o, v, vn)) != 0)
        return rc;
    return PUT_LIT(o, "}\n");
}

/* a bytes-or-None slot as out_framing's arguments; 1: neither */
static int
framing_of(PyObject *x, const unsigned char **s, Py_ssize_t *n)
{
    if (x == Py_None) {
        *s = NULL;
        *n = 0;
        return 0;
    }
    if (!PyBytes_CheckExact(x))
        return 1;
    *s = (const unsigned char *)PyBytes_AS_STRING(x);
    *n = PyBytes_GET_SIZE(x);
    return 0;
}

/* one record's line; 0, -1 (exception), 1 (hand back) */
static int
out_record(Out *o, PyObject *r, PyObject *prefix, PyObject *mid_ts, PyObject *tail, int mode,
           PyObject *val_json, PyObject *dumps)
{
    int rc;
    if (Py_TYPE(r) != record_type)
        return 1;
    for (int i = 0; i < R_NSLOTS; i++)
        if (SLOT(r, i) == NULL)
            return 1;
    if ((rc = out_str(o, prefix)) != 0 || (rc = out_int(o, SLOT(r, R_OFFSET))) != 0
        || (rc = PUT_LIT(o, ",\"timestamp\":")) != 0 || (rc = out_int(o, SLOT(r, R_TIMESTAMP))) != 0
        || (rc = out_str(o, mid_ts)) != 0 || (rc = out_field(o, SLOT(r, R_KEY), mode, val_json)) != 0
        || (rc = PUT_LIT(o, ",\"value\":")) != 0
        || (rc = out_field(o, SLOT(r, R_VALUE), mode, val_json)) != 0
        || (rc = PUT_LIT(o, ",\"headers\":")) != 0
        || (rc = out_headers(o, SLOT(r, R_HEADERS), mode, val_json, dumps)) != 0
        || (rc = PUT_LIT(o, ",\"offsetDelta\":")) != 0 || (rc = out_int(o, SLOT(r, R_OFFSET_DELTA))) != 0
        || (rc = PUT_LIT(o, ",\"timestampDelta\":")) != 0
        || (rc = out_int(o, SLOT(r, R_TIMESTAMP_DELTA))) != 0 || (rc = out_str(o, tail)) != 0)
        return rc;
    const unsigned char *ks, *vs;
    Py_ssize_t kn, vn;
    if (framing_of(SLOT(r, R_KEY), &ks, &kn) || framing_of(SLOT(r, R_VALUE), &vs, &vn))
        return 1;
    return out_payloads(o, ks, kn, vs, vn);
}

static PyObject *
format_lines(PyObject *self, PyObject *args)
{
    PyObject *recs, *prefix, *mid_ts, *tail, *val_json, *dumps;
    int mode;
    if (!PyArg_ParseTuple(args, "O!UUUiOO", &PyList_Type, &recs, &prefix, &mid_ts, &tail, &mode, &val_json,
                          &dumps))
        return NULL;
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    Out o = {NULL, 0, 0, 1};
    /* the list may change under a Python callback: index it afresh each time */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(recs); i++) {
        PyObject *r = PyList_GET_ITEM(recs, i);
        Py_INCREF(r);
        int rc = out_record(&o, r, prefix, mid_ts, tail, mode, val_json, dumps);
        Py_DECREF(r);
        if (rc != 0)
            return out_result(&o, rc);
    }
    return out_result(&o, 0);
}

/* ---- records without objects: the check of a plain run, and its lines ---------------------------- */

static int
consts_from(RunConsts *k, long long base_offset, long long base_ts, long long max_ts, int log_append)
{
    k->ts_type = k->source = k->zero_magic = NULL;
    k->base_offset = base_offset;
    k->base_ts = base_ts;
    k->max_ts = max_ts;
    k->log_append = log_append;
    k->shift = 0;
    return 0;
}

static PyObject *
record_check(PyObject *self, PyObject *args)
{
    PyObject *data;
    Py_ssize_t pos, end, count;
    long long base_offset, base_ts, max_ts, lod;
    int log_append;
    Py_buffer view;
    int opened = open_run(args, "OnnnLLLpL", &view, &data, &pos, &end, &count, &base_offset, &base_ts, &max_ts,
                          &log_append, &lod);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    RunConsts k;
    consts_from(&k, base_offset, base_ts, max_ts, log_append);
    Py_ssize_t n = 0;
    int ordered = 1;
    int64_t prev = -1, top = 0;
    Fields f;
    while (pos < end) {
        if (n >= count || parse_one(d, pos, end, &k, &f) < 0) {  /* trailing bytes, or not plain */
            PyBuffer_Release(&view);
            Py_RETURN_NONE;
        }
        if (f.off_delta <= prev || f.off_delta > lod)
            ordered = 0;
        prev = f.off_delta;
        if (n == 0 || f.timestamp > top)
            top = f.timestamp;
        pos = f.rend;
        n++;
    }
    PyBuffer_Release(&view);
    PyObject *top_obj = n ? PyLong_FromLongLong(top) : (Py_INCREF(Py_None), Py_None);
    if (top_obj == NULL)
        return NULL;
    return Py_BuildValue("(nON)", n, ordered ? Py_True : Py_False, top_obj);
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

/* the headers of a checked record, as RecordLines._headers writes them */
static int
out_raw_headers(Out *o, const unsigned char *d, const Fields *f, int mode, PyObject *val_json, PyObject *dumps)
{
    Py_ssize_t pos = f->hstart;
    int rc;
    if (PUT_LIT(o, "[") < 0)
        return -1;
    for (int64_t i = 0; i < f->hcount; i++) {
        int64_t hk = 0, hv = -1;
        read_varint(d, &pos, f->rend, 5, &hk);  /* checked by parse_one */
        const unsigned char *key = d + pos;
        pos += (Py_ssize_t)hk;
        if (schema_header_name((const char *)key, (Py_ssize_t)hk))
            return 1;  /* a header names the key's or value's schema: Python writes the framing */
        if ((rc = (i ? PUT_LIT(o, ",{\"key\":") : PUT_LIT(o, "{\"key\":"))) != 0)
            return rc;
        int ascii = 1;
        for (int64_t j = 0; j < hk; j++)
            if (key[j] >= 0x80) {
                ascii = 0;
                break;
            }
        if (ascii)
            rc = out_json_ascii_chars(o, key, (Py_ssize_t)hk);
        else {
            PyObject *k = PyUnicode_DecodeUTF8((const char *)key, (Py_ssize_t)hk, "backslashreplace");
            if (k == NULL)
                return -1;
            rc = PyUnicode_IS_ASCII(k) ? out_json_ascii_str(o, k) : out_call(o, dumps, k);
            Py_DECREF(k);
        }
        if (rc != 0)
            return rc;
        read_varint(d, &pos, f->rend, 5, &hv);
        if ((rc = PUT_LIT(o, ",\"value\":")) != 0)
            return rc;
        if (hv < 0)
            rc = PUT_LIT(o, "null");
        else {
            rc = out_bytes(o, d + pos, (Py_ssize_t)hv, NULL, mode, val_json);
            pos += (Py_ssize_t)hv;
        }
        if (rc != 0 || (rc = PUT_LIT(o, "}")) != 0)
            return rc;
    }
    return PUT_LIT(o, "]");
}

static int
out_raw_record(Out *o, const unsigned char *d, const Fields *f, PyObject *prefix, PyObject *mid_ts,
               PyObject *tail, int mode, PyObject *val_json, PyObject *dumps)
{
    int rc;
    if ((rc = out_str(o, prefix)) != 0 || (rc = out_i64(o, f->offset)) != 0
        || (rc = PUT_LIT(o, ",\"timestamp\":")) != 0 || (rc = out_i64(o, f->timestamp)) != 0
        || (rc = out_str(o, mid_ts)) != 0)
        return rc;
    rc = f->klen < 0 ? PUT_LIT(o, "null") : out_bytes(o, d + f->p_key, (Py_ssize_t)f->klen, NULL, mode, val_json);
    if (rc != 0 || (rc = PUT_LIT(o, ",\"value\":")) != 0)
        return rc;
    rc = f->vlen < 0 ? PUT_LIT(o, "null") : out_bytes(o, d + f->p_val, (Py_ssize_t)f->vlen, NULL, mode, val_json);
    if (rc != 0 || (rc = PUT_LIT(o, ",\"headers\":")) != 0
        || (rc = out_raw_headers(o, d, f, mode, val_json, dumps)) != 0
        || (rc = PUT_LIT(o, ",\"offsetDelta\":")) != 0 || (rc = out_i64(o, f->off_delta)) != 0
        || (rc = PUT_LIT(o, ",\"timestampDelta\":")) != 0 || (rc = out_i64(o, f->ts_delta)) != 0
        || (rc = out_str(o, tail)) != 0)
        return rc;
    return out_payloads(o, f->klen < 0 ? NULL : d + f->p_key, (Py_ssize_t)(f->klen < 0 ? 0 : f->klen),
                        f->vlen < 0 ? NULL : d + f->p_val, (Py_ssize_t)(f->vlen < 0 ? 0 : f->vlen));
}

static PyObject *
format_run(PyObject *self, PyObject *args)
{
    PyObject *data, *prefix, *mid_ts, *tail, *val_json, *dumps;
    Py_ssize_t pos, end, limit;
    long long base_offset, base_ts, max_ts;
    int log_append, mode;
    Py_buffer view;
    int opened = open_run(args, "OnnnLLLpUUUiOO", &view, &data, &pos, &end, &limit, &base_offset, &base_ts,
                          &max_ts, &log_append, &prefix, &mid_ts, &tail, &mode, &val_json, &dumps);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    RunConsts k;
    consts_from(&k, base_offset, base_ts, max_ts, log_append);
    Out o = {NULL, 0, 0, 1};
    Py_ssize_t n = 0;
    Fields f;
    while (pos < end && n < limit) {
        int rc = parse_one(d, pos, end, &k, &f) < 0 ? 1
                 : out_raw_record(&o, d, &f, prefix, mid_ts, tail, mode, val_json, dumps);
        if (rc != 0) {
            PyBuffer_Release(&view);
            return out_result(&o, rc);
        }
        pos = f.rend;
        n++;
    }
    PyBuffer_Release(&view);
    PyObject *s = out_finish(&o);
    if (s == NULL)
        return NULL;
    return Py_BuildValue("(Nnn)", s, pos, n);
}

/* ---- batch lines: render.jsonl.batch_line ------------------------------------------------------ */

/* an int slot in C: 0, 1 (None), 2 (neither None nor an exact int of 64 bits: hand back), -1 (error) */
static int
slot_int(PyObject *v, long long *x)
{
    if (v == Py_None)
        return 1;
    if (v == NULL || !PyLong_CheckExact(v))
        return 2;
    int overflow;
    *x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        return 2;
    return (*x == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* the header fields batch_line writes as they are (ints, in this order, each after its label) */
static const struct {
    const char *label;
    int slot;
} BATCH_INTS[] = {
    {",\"position\":", B_POSITION}, {",\"size\":", B_SIZE}, {",\"baseOffset\":", B_BASE_OFFSET},
    {",\"batchLength\":", B_BATCH_LENGTH}, {",\"partitionLeaderEpoch\":", B_LEADER_EPOCH},
    {",\"magic\":", B_MAGIC}, {",\"crc\":", B_CRC}, {",\"attributes\":", B_ATTRIBUTES},
    {",\"lastOffsetDelta\":", B_LAST_OFFSET_DELTA}, {",\"baseTimestamp\":", B_BASE_TIMESTAMP},
    {",\"maxTimestamp\":", B_MAX_TIMESTAMP}, {",\"producerId\":", B_PRODUCER_ID},
    {",\"producerEpoch\":", B_PRODUCER_EPOCH}, {",\"baseSequence\":", B_BASE_SEQUENCE},
    {",\"recordCount\":", B_RECORD_COUNT},
};
#define N_BATCH_INTS ((int)(sizeof BATCH_INTS / sizeof BATCH_INTS[0]))

/* decode.compression.CODEC_NAMES (and Batch.compression's "unknown(N)"), as JSON */
static const char *const CODEC_JSON[8] = {
    "\"none\"", "\"gzip\"", "\"snappy\"", "\"lz4\"", "\"zstd\"", "\"unknown(5)\"", "\"unknown(6)\"", "\"unknown(7)\"",
};

static inline int
out_cstr(Out *o, const char *s)
{
    return out_put(o, s, (Py_ssize_t)strlen(s));
}

static inline int
out_bool(Out *o, int b)
{
    return b ? PUT_LIT(o, "true") : PUT_LIT(o, "false");
}

/* an int or None (the other cases are handed back before) */
static inline int
out_opt(Out *o, int none, long long x)
{
    return none ? PUT_LIT(o, "null") : out_i64(o, x);
}

/* Batch.last_sequence of an int baseSequence and lastOffsetDelta: their sum wrapped past INT32_MAX,
 * or -1 / None without a sequence.  0 (*x set), 1 (None), 2 (hand back: past 64 bits) */
static int
last_sequence(long long bseq, long long lod, long long *x)
{
    *x = -1;
    if (bseq < 0)
        return bseq == -1 ? 0 : 1;
    if (__builtin_add_overflow(bseq, lod, x))
        return 2;
    if (*x > 0x7FFFFFFFLL)
        *x -= 1LL << 31;
    return 0;
}

/* The line of a batch without findings; 0, -1 (exception), 1 (hand back: Python writes it) */
static int
out_batch(Out *o, PyObject *b, PyObject *file_json)
{
    long long v[B_NSLOTS];
    int none[B_NSLOTS];
    static const int ints[] = {B_POSITION, B_SIZE, B_MAGIC, B_BASE_OFFSET, B_BATCH_LENGTH, B_LEADER_EPOCH,
                               B_CRC, B_COMPUTED_CRC, B_ATTRIBUTES, B_LAST_OFFSET_DELTA, B_BASE_TIMESTAMP,
                               B_MAX_TIMESTAMP, B_PRODUCER_ID, B_PRODUCER_EPOCH, B_BASE_SEQUENCE,
                               B_RECORD_COUNT, B_DECOMPRESSED_SIZE};
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        int rc = slot_int(BSLOT(b, ints[i]), &v[ints[i]]);
        if (rc < 0 || rc == 2)
            return rc < 0 ? -1 : 1;
        none[ints[i]] = rc;
    }
    for (int i = 0; i < N_BATCH_INTS; i++)
        if (none[BATCH_INTS[i].slot])
            return 1;  /* a header field of None: Python writes what it writes */
    PyObject *findings = BSLOT(b, B_FINDINGS);
    if (findings == NULL || !PyList_CheckExact(findings) || PyList_GET_SIZE(findings) != 0)
        return 1;
    long long last_offset, last_seq, a = v[B_ATTRIBUTES];
    int ls = last_sequence(v[B_BASE_SEQUENCE], v[B_LAST_OFFSET_DELTA], &last_seq);
    if (ls == 2 || v[B_MAGIC] < 2 || a < 0
        || __builtin_add_overflow(v[B_BASE_OFFSET], v[B_LAST_OFFSET_DELTA], &last_offset))
        return 1;  /* (Batch.last_offset and timestampType differ below magic 2) */
    int rc;
    if ((rc = PUT_LIT(o, "{\"type\":\"batch\",\"file\":")) != 0 || (rc = out_str(o, file_json)) != 0)
        return rc;
    for (int i = 0; i < N_BATCH_INTS; i++)
        if ((rc = out_cstr(o, BATCH_INTS[i].label)) != 0 || (rc = out_i64(o, v[BATCH_INTS[i].slot])) != 0)
            return rc;
    int crc_none = none[B_COMPUTED_CRC];
    if ((rc = PUT_LIT(o, ",\"lastOffset\":")) != 0 || (rc = out_i64(o, last_offset)) != 0
        || (rc = PUT_LIT(o, ",\"lastSequence\":")) != 0 || (rc = out_opt(o, ls, last_seq)) != 0
        || (rc = PUT_LIT(o, ",\"compression\":")) != 0 || (rc = out_cstr(o, CODEC_JSON[a & 7])) != 0
        || (rc = ((a >> 3) & 1 ? PUT_LIT(o, ",\"timestampType\":\"LogAppendTime\"")
                               : PUT_LIT(o, ",\"timestampType\":\"CreateTime\""))) != 0
        || (rc = PUT_LIT(o, ",\"isTransactional\":")) != 0 || (rc = out_bool(o, a & 0x10)) != 0
        || (rc = PUT_LIT(o, ",\"isControlBatch\":")) != 0 || (rc = out_bool(o, a & 0x20)) != 0
        || (rc = PUT_LIT(o, ",\"hasDeleteHorizonMs\":")) != 0 || (rc = out_bool(o, a & 0x40)) != 0
        || (rc = PUT_LIT(o, ",\"crcValid\":")) != 0
        || (rc = crc_none ? PUT_LIT(o, "null") : out_bool(o, v[B_CRC] == v[B_COMPUTED_CRC])) != 0
        || (rc = PUT_LIT(o, ",\"computedCrc\":")) != 0 || (rc = out_opt(o, crc_none, v[B_COMPUTED_CRC])) != 0)
        return rc;
    if (!none[B_DECOMPRESSED_SIZE]
        && ((rc = PUT_LIT(o, ",\"decompressedSize\":")) != 0 || (rc = out_i64(o, v[B_DECOMPRESSED_SIZE])) != 0))
        return rc;
    return PUT_LIT(o, ",\"findings\":[]}");
}

static PyObject *
batch_json(PyObject *self, PyObject *args)
{
    PyObject *b, *file_json;
    if (!PyArg_ParseTuple(args, "OU", &b, &file_json))
        return NULL;
    if (batch_type == NULL || Py_TYPE(b) != batch_type)
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0, 1};
    return out_result(&o, out_batch(&o, b, file_json));
}

/* ---- verify-crc's hop ----------------------------------------------------------------------- */

/* A batch's CRC region checksummed by ``crc_fn`` (a Python function, the crc32c package's): the CRC, or
 * -1 with an exception set.  The view is valid while the caller holds the buffer (crc32c keeps none). */
static int64_t
python_crc(PyObject *crc_fn, const unsigned char *p, Py_ssize_t n)
{
    PyObject *region = PyMemoryView_FromMemory((char *)p, n, PyBUF_READ);
    if (region == NULL)
        return -1;
    PyObject *c = PyObject_CallOneArg(crc_fn, region);
    Py_DECREF(region);
    if (c == NULL)
        return -1;
    unsigned long computed = PyLong_AsUnsignedLong(c);
    Py_DECREF(c);
    if (computed == (unsigned long)-1 && PyErr_Occurred())
        return -1;
    return (int64_t)(uint32_t)computed;
}

/* The intact v2 batches from ``pos`` (see crc_hop): where the walk stopped, or -1 with an exception set
 * (only when ``crc_fn`` raised).  It stops before ``until`` and at the first batch that is not framed
 * plainly or whose CRC-32C differs from the stored one.  Without ``crc_fn`` (NULL: crc32c.h computes
 * the CRCs) it touches no Python object and may run without the GIL. */
static Py_ssize_t
hop_intact(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t until, Py_ssize_t max_length,
           PyObject *crc_fn, Py_ssize_t *batches, long long *nbytes)
{
    while (pos < until && end - pos >= 61) {
        const unsigned char *h = d + pos;
        int32_t length = (int32_t)(((uint32_t)h[8] << 24) | ((uint32_t)h[9] << 16) | ((uint32_t)h[10] << 8) | h[11]);
        Py_ssize_t nxt = pos + 12 + (Py_ssize_t)length;
        if (h[16] != 2 || length < 49 || length > max_length || nxt > end)
            break;
        uint32_t stored = ((uint32_t)h[17] << 24) | ((uint32_t)h[18] << 16) | ((uint32_t)h[19] << 8) | h[20];
        int64_t computed = crc_fn == NULL ? (int64_t)kafkadump_crc32c(0, h + 21, (size_t)(nxt - pos - 21))
                                          : python_crc(crc_fn, h + 21, nxt - pos - 21);
        if (computed < 0)
            return -1;
        if ((uint32_t)computed != stored)
            break;
        (*batches)++;
        *nbytes += (long long)length + 12;
        pos = nxt;
    }
    return pos;
}

static PyObject *
crc_hop(PyObject *self, PyObject *args)
{
    PyObject *buf, *crc_fn = Py_None;
    Py_ssize_t pos, end, until, max_length, batches = 0;
    long long nbytes = 0;
    Py_buffer view;
    int opened = open_run(args, "Onnnn|O", &view, &buf, &pos, &end, &until, &max_length, &crc_fn);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    /* (the view keeps the buffer exported: a mapping cannot be closed under the walk) */
    if (crc_fn == Py_None) {
        Py_BEGIN_ALLOW_THREADS
        pos = hop_intact(d, pos, end, until, max_length, NULL, &batches, &nbytes);
        Py_END_ALLOW_THREADS
    } else
        pos = hop_intact(d, pos, end, until, max_length, crc_fn, &batches, &nbytes);
    PyBuffer_Release(&view);
    if (pos < 0)
        return NULL;
    return Py_BuildValue("(nnL)", pos, batches, nbytes);
}

/* ---- CRC-32C ------------------------------------------------------------------------------------- */

/* 1 MiB and more: without the GIL */
#define CRC_NOGIL_BYTES (1 << 20)

static PyObject *
crc32c(PyObject *self, PyObject *args)
{
    Py_buffer view;
    unsigned long value = 0;
    const char *code = NULL;
    if (!PyArg_ParseTuple(args, "y*|kz", &view, &value, &code))
        return NULL;
    crc32c_fn fn = crc32c_raw;
    if (code != NULL) {
        int i = 0;
        while (i < crc32c_ncodes && strcmp(code, crc32c_codes[i].name) != 0)
            i++;
        if (i == crc32c_ncodes) {
            PyBuffer_Release(&view);
            return PyErr_Format(PyExc_ValueError, "no CRC-32C code %s on this CPU", code);
        }
        fn = crc32c_codes[i].fn;
    }
    const unsigned char *p = (const unsigned char *)view.buf;
    size_t n = (size_t)view.len;
    uint32_t state = ~(uint32_t)value;
    if (n >= CRC_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        state = fn(state, p, n);
        Py_END_ALLOW_THREADS
    } else
        state = fn(state, p, n);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(~state);
}

static PyObject *
crc32c_code_names(PyObject *self, PyObject *unused)
{
    PyObject *names = PyTuple_New(crc32c_ncodes);
    for (int i = 0; names != NULL && i < crc32c_ncodes; i++) {
        PyObject *name = PyUnicode_FromString(crc32c_codes[i].name);
        if (name == NULL) {
            Py_CLEAR(names);
            break;
        }
        PyTuple_SET_ITEM(names, i, name);
    }
    return names;
}

/* ---- the step over an intact plain batch ------------------------------------------------------- */

static inline uint32_t
be32(const unsigned char *h)
{
    return ((uint32_t)h[0] << 24) | ((uint32_t)h[1] << 16) | ((uint32_t)h[2] << 8) | h[3];
}

static inline int64_t
be64(const unsigned char *h)
{
    return (int64_t)(((uint64_t)be32(h) << 32) | be32(h + 4));
}

/* decode.batch.decode_batch_header's Batch of the 61 header bytes at ``h``, its computed_crc set:
 * a new Batch, or NULL with an exception set */
static PyObject *
new_batch(const unsigned char *h, PyObject *file, Py_ssize_t position, PyObject *computed_crc)
{
    PyObject *b = batch_type->tp_alloc(batch_type, 0);
    if (b == NULL)
        return NULL;
    for (int i = B_RECORDS; i < B_NSLOTS; i++)
        BSLOT(b, i) = Py_NewRef(Py_None);
    BSLOT(b, B_FILE) = Py_NewRef(file);
    BSLOT(b, B_COMPUTED_CRC) = Py_NewRef(computed_crc);
    BSLOT(b, B_DECOMPRESSED_SIZE) = Py_NewRef(Py_None);
    BSLOT(b, B_FINDINGS) = PyList_New(0);
    BSLOT(b, B_POSITION) = PyLong_FromSsize_t(position);
    BSLOT(b, B_SIZE) = PyLong_FromLongLong((long long)(int32_t)be32(h + 8) + 12);
    BSLOT(b, B_MAGIC) = PyLong_FromLong((signed char)h[16]);
    BSLOT(b, B_BASE_OFFSET) = PyLong_FromLongLong(be64(h));
    BSLOT(b, B_BATCH_LENGTH) = PyLong_FromLong((int32_t)be32(h + 8));
    BSLOT(b, B_LEADER_EPOCH) = PyLong_FromLong((int32_t)be32(h + 12));
    BSLOT(b, B_CRC) = PyLong_FromUnsignedLong(be32(h + 17));
    BSLOT(b, B_ATTRIBUTES) = PyLong_FromLong(((long)h[21] << 8) | h[22]);
    BSLOT(b, B_LAST_OFFSET_DELTA) = PyLong_FromLong((int32_t)be32(h + 23));
    BSLOT(b, B_BASE_TIMESTAMP) = PyLong_FromLongLong(be64(h + 27));
    BSLOT(b, B_MAX_TIMESTAMP) = PyLong_FromLongLong(be64(h + 35));
    BSLOT(b, B_PRODUCER_ID) = PyLong_FromLongLong(be64(h + 43));
    BSLOT(b, B_PRODUCER_EPOCH) = PyLong_FromLong((int16_t)(((unsigned)h[51] << 8) | h[52]));
    BSLOT(b, B_BASE_SEQUENCE) = PyLong_FromLong((int32_t)be32(h + 53));
    BSLOT(b, B_RECORD_COUNT) = PyLong_FromLong((int32_t)be32(h + 57));
    for (int i = 0; i < B_NSLOTS; i++) {
        if (BSLOT(b, i) == NULL) {  /* an allocation failed: the exception is set */
            Py_DECREF(b);
            return NULL;
        }
    }
    return b;
}

static PyObject *
batch_hop(PyObject *self, PyObject *args)
{
    PyObject *buf, *crc_fn, *file;
    Py_ssize_t pos, end, max_length, copy_max, position;
    if (batch_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure_batch() was not called");
        return NULL;
    }
    Py_buffer view;
    int opened = open_run(args, "OnnnnOOn", &view, &buf, &pos, &end, &max_length, &copy_max, &crc_fn, &file,
                          &position);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *h = (const unsigned char *)view.buf + pos;
    PyObject *result = NULL, *c = NULL, *batch = NULL;
    if (end - pos < 61 || h[16] != 2)
        goto hand_back;
    int32_t length = (int32_t)be32(h + 8);
    Py_ssize_t size = (Py_ssize_t)length + 12;
    if (length < 49 || length > max_length || size > end - pos || size > copy_max)
        goto hand_back;
    unsigned attributes = ((unsigned)h[21] << 8) | h[22];
    int32_t lod = (int32_t)be32(h + 23), count = (int32_t)be32(h + 57);
    /* what check_header would say something about, a compressed or control batch: the Python step */
    if ((attributes & 0xFF80) || (attributes & 0x07) || (attributes & 0x20) || count < 0 || (count > 0 && lod < 0))
        goto hand_back;
    PyObject *region = PyMemoryView_FromMemory((char *)h + 21, size - 21, PyBUF_READ);
    if (region == NULL)
        goto error;
    c = PyObject_CallOneArg(crc_fn, region);
    Py_DECREF(region);
    if (c == NULL)
        goto error;
    unsigned long computed = PyLong_AsUnsignedLong(c);
    if (computed == (unsigned long)-1 && PyErr_Occurred())
        goto error;
    if (computed != be32(h + 17))
        goto hand_back;
    batch = new_batch(h, file, position, c);
    if (batch == NULL)
        goto error;
    PyObject *chunk = PyBytes_FromStringAndSize((const char *)h, size);
    if (chunk == NULL)
        goto error;
    result = Py_BuildValue("(NN)", batch, chunk);
    batch = NULL;  /* (Py_BuildValue took it, or freed it on failure) */
    goto done;
hand_back:
    result = Py_NewRef(Py_None);
    goto done;
error:
    result = NULL;
done:
    Py_XDECREF(c);
    Py_XDECREF(batch);
    PyBuffer_Release(&view);
    return result;
}

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "Take Record's slot layout (call once, with decode.model.Record)."},
    {"configure_batch", configure_batch, METH_O, "Take Batch's slot layout (call once, with decode.model.Batch)."},
    {"batch_json", batch_json, METH_VARARGS, "A v2 batch's JSON line without findings (None: hand back)."},
    {"record_run", record_run, METH_VARARGS, "The record loop of a plain batch run (None: hand back)."},
    {"format_lines", format_lines, METH_VARARGS, "JSON lines of a list of v2 records (None: hand back)."},
    {"record_check", record_check, METH_VARARGS, "Check a plain batch's records without objects (None: hand back)."},
    {"format_run", format_run, METH_VARARGS, "JSON lines of a checked run, straight from its bytes (None: hand back)."},
    {"batch_hop", batch_hop, METH_VARARGS, "An intact, uncompressed, non-control v2 batch: (its Batch, its bytes)."},
    {"crc_hop", crc_hop, METH_VARARGS, "Walk intact v2 batches: (stop position, batches, bytes)."},
    {"crc32c", crc32c, METH_VARARGS, "CRC-32C of a buffer, continuing a CRC (the crc32c package's crc32c)."},
    {"crc32c_codes", crc32c_code_names, METH_NOARGS, "The CRC-32C codes this CPU runs, the one in use first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.hotloops",
    "The compiled twin of kafkadump's hot loops (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_hotloops(void)
{
    init_auto_class();
    crc32c_setup();
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py expects them: a build older than the Python code
     * (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", HOTLOOPS_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
