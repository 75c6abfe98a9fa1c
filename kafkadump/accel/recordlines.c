/* kafkadump.accel.recordlines: the compiled twin of the record lines of --json.
 *
 * The pure-Python code (render.jsonl.RecordLines) is the reference; a writer here writes exactly the
 * text Python writes for plain records and hands anything else back (returns None), and Python then
 * writes the lines.  Which per-record fields a line holds, in which order, is the field registry's
 * (generated_fields.h's KD_RECORD_FIELDS); the text before, between and after them (``segs``: a tuple of
 * KD_PLAIN_SEGMENTS str, render.generated_lines.plain_segments) comes from Python; the payload fields and
 * the other literals are line_literals.h's.
 *
 *   configure(Record)                       Record's slot offsets (format_lines reads records by them)
 *   format_lines(records, segs, mode, val_json, dumps)
 *       twin of render.jsonl.RecordLines.batch_lines' loop: None, or the lines as one str
 *   format_run(data, pos, end, limit, base_offset, base_ts, max_ts, log_append, segs, mode, val_json, dumps)
 *       the lines of a plain run's records straight from its bytes (no Record objects): None, or
 *       (the lines, pos, n)
 *   window_record_lines(buf, pos, stop, base, segs_create, segs_log_append, after_position, mode, val_json,
 *                       dumps, bounds)
 *       the lines of the records of a window of plain batches (batchstep.plain_window's) that ``bounds``
 *       keep ((from_offset, to_offset, from_time, to_time), int64; batches pruned by header first, as
 *       reports.query.RecordQuery does): None, or the lines as one str.  ``segs_*``: format_run's segs
 *       of each timestamp type, their first ending before the batch's position, which ``after_position``
 *       follows (positions are ``base`` + position in ``buf``)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "record_slots.h"
#include "runs.h"
#include "recordparse.h"
#include "jsonout.h"
#include "line_literals.h"
#include "generated_fields.h"
#include "plainwindow.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define RECORDLINES_INTERFACE 3

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
            copy_text(p, (const char *)s + i, k);
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
    if (PUT_LIT(o, REC_BASE64_OPEN) < 0 || out_base64(o, s, n) < 0)
        return -1;
    return PUT_LIT(o, JSON_OBJECT_CLOSE);
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
        return PUT_LIT(o, JSON_NULL);
    if (!PyBytes_CheckExact(v))
        return 1;
    return out_bytes(o, (const unsigned char *)PyBytes_AS_STRING(v), PyBytes_GET_SIZE(v), v, mode, val_json);
}

/* ---- keyPayload / valuePayload: report.records.framing_object without headers naming a schema ---- */

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
    if (PUT_LIT(o, JSON_LIST_OPEN) < 0)
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
        if ((rc = (i ? PUT_LIT(o, REC_HEADER_NEXT) : PUT_LIT(o, REC_HEADER_FIRST))) != 0)
            return rc;
        if (PyUnicode_IS_ASCII(k))
            rc = out_json_ascii_str(o, k);
        else
            rc = out_call(o, dumps, k);
        if (rc != 0)
            return rc;
        if ((rc = PUT_LIT(o, REC_HEADER_VALUE)) != 0 || (rc = out_field(o, v, mode, val_json)) != 0)
            return rc;
        if ((rc = PUT_LIT(o, JSON_OBJECT_CLOSE)) != 0)
            return rc;
    }
    return PUT_LIT(o, JSON_LIST_CLOSE);
}

/* a key or value's framing object (s: NULL for null) */
static int
out_framing(Out *o, const unsigned char *s, Py_ssize_t n)
{
    if (s == NULL)
        return PUT_LIT(o, JSON_NULL);
    if (n == 0 || s[0] != 0)
        return PUT_LIT(o, REC_FRAMING_NONE);
    if (n < 5)
        return PUT_LIT(o, REC_FRAMING_SHORT);
    int32_t sid = (int32_t)(((uint32_t)s[1] << 24) | ((uint32_t)s[2] << 16) | ((uint32_t)s[3] << 8) | (uint32_t)s[4]);
    if (sid < 0)   /* a registry never gives a negative id: not framed (framing.schema_framing) */
        return PUT_LIT(o, REC_FRAMING_NONE);
    int rc = sid > 0 ? PUT_LIT(o, REC_FRAMING_CERTAIN_ID)
                     : PUT_LIT(o, REC_FRAMING_UNCERTAIN_ID);
    if (rc != 0 || (rc = out_i64(o, sid)) != 0)
        return rc;
    return PUT_LIT(o, REC_FRAMING_ID_END);
}

/* the payload fields after ``tail`` (which ends with ``,"keyPayload":``), and the line's end */
static int
out_payloads(Out *o, const unsigned char *k, Py_ssize_t kn, const unsigned char *v, Py_ssize_t vn)
{
    int rc;
    if ((rc = out_framing(o, k, kn)) != 0 || (rc = PUT_LIT(o, REC_VALUE_PAYLOAD)) != 0
        || (rc = out_framing(o, v, vn)) != 0)
        return rc;
    return PUT_LIT(o, REC_LINE_END);
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

/* the text between a line's per-record fields, resolved once per call (valid while the caller's segs
 * tuple lives: the call's arguments hold it) */
typedef struct {
    const char *text[KD_PLAIN_SEGMENTS];
    Py_ssize_t len[KD_PLAIN_SEGMENTS];
    int ascii;
} Segments;

/* segs: a tuple of KD_PLAIN_SEGMENTS str (else a TypeError: 0) */
static int
segments_from(PyObject *segs, Segments *sg)
{
    if (!PyTuple_CheckExact(segs) || PyTuple_GET_SIZE(segs) != KD_PLAIN_SEGMENTS) {
        PyErr_Format(PyExc_TypeError, "segs must be a tuple of %d str", KD_PLAIN_SEGMENTS);
        return 0;
    }
    sg->ascii = 1;
    for (Py_ssize_t i = 0; i < KD_PLAIN_SEGMENTS; i++) {
        PyObject *s = PyTuple_GET_ITEM(segs, i);
        if (!PyUnicode_CheckExact(s)) {
            PyErr_Format(PyExc_TypeError, "segs must be a tuple of %d str", KD_PLAIN_SEGMENTS);
            return 0;
        }
        sg->text[i] = PyUnicode_AsUTF8AndSize(s, &sg->len[i]);
        if (sg->text[i] == NULL)
            return 0;
        if (!PyUnicode_IS_ASCII(s))
            sg->ascii = 0;
    }
    return 1;
}

/* a per-record field of a Record, by its kind (generated_fields.h) */
#define SLOT_INT(x) out_int(o, (x))
#define SLOT_BYTES(x) out_field(o, (x), mode, val_json)
#define SLOT_HEADERS(x) out_headers(o, (x), mode, val_json, dumps)

/* one record's line; 0, -1 (exception), 1 (hand back) */
static int
out_record(Out *o, PyObject *r, const Segments *sg, int mode, PyObject *val_json, PyObject *dumps)
{
    int rc;
    Py_ssize_t seg = 0;
    if (Py_TYPE(r) != record_type)
        return 1;
    for (int i = 0; i < R_NSLOTS; i++)
        if (SLOT(r, i) == NULL)
            return 1;
#define WRITE_SLOT(kind, slot, var) \
    if ((rc = out_put(o, sg->text[seg], sg->len[seg])) != 0 || (seg++, rc = SLOT_##kind(SLOT(r, slot))) != 0) \
        return rc;
    KD_RECORD_FIELDS(WRITE_SLOT)
#undef WRITE_SLOT
    if ((rc = out_put(o, sg->text[seg], sg->len[seg])) != 0 || (rc = PUT_LIT(o, REC_KEY_PAYLOAD)) != 0)
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
    PyObject *recs, *segs, *val_json, *dumps;
    int mode;
    Segments sg;
    if (!PyArg_ParseTuple(args, "O!OiOO", &PyList_Type, &recs, &segs, &mode, &val_json, &dumps)
        || !segments_from(segs, &sg))
        return NULL;
    if (record_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    Out o = {NULL, 0, 0, sg.ascii};
    /* the list may change under a Python callback: index it afresh each time */
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(recs); i++) {
        PyObject *r = PyList_GET_ITEM(recs, i);
        Py_INCREF(r);
        int rc = out_record(&o, r, &sg, mode, val_json, dumps);
        Py_DECREF(r);
        if (rc != 0)
            return out_result(&o, rc);
    }
    return out_result(&o, 0);
}

/* ---- the lines of a plain run straight from its bytes (no Record objects) ---------------------------- */

/* the headers of a checked record, as RecordLines._headers writes them */
static int
out_raw_headers(Out *o, const unsigned char *d, const Fields *f, int mode, PyObject *val_json, PyObject *dumps)
{
    Py_ssize_t pos = f->hstart;
    int rc;
    if (PUT_LIT(o, JSON_LIST_OPEN) < 0)
        return -1;
    for (int64_t i = 0; i < f->hcount; i++) {
        int64_t hk = 0, hv = -1;
        read_varint(d, &pos, f->rend, 5, &hk);  /* checked by parse_one */
        const unsigned char *key = d + pos;
        pos += (Py_ssize_t)hk;
        if (schema_header_name((const char *)key, (Py_ssize_t)hk))
            return 1;  /* a header names the key's or value's schema: Python writes the framing */
        if ((rc = (i ? PUT_LIT(o, REC_HEADER_NEXT) : PUT_LIT(o, REC_HEADER_FIRST))) != 0)
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
        if ((rc = PUT_LIT(o, REC_HEADER_VALUE)) != 0)
            return rc;
        if (hv < 0)
            rc = PUT_LIT(o, JSON_NULL);
        else {
            rc = out_bytes(o, d + pos, (Py_ssize_t)hv, NULL, mode, val_json);
            pos += (Py_ssize_t)hv;
        }
        if (rc != 0 || (rc = PUT_LIT(o, JSON_OBJECT_CLOSE)) != 0)
            return rc;
    }
    return PUT_LIT(o, JSON_LIST_CLOSE);
}

/* a per-record field of a checked record, by the name generated_fields.h gives its variable: the
 * values format_run knows (a registry field naming another one needs a line here) */
#define RAW_INT(x) out_i64(o, (x))
#define RAW_BYTES(x) out_raw_bytes(o, d, x, mode, val_json)
#define RAW_HEADERS(x) out_raw_headers(o, d, f, mode, val_json, dumps)
#define RAW_offset f->offset
#define RAW_timestamp f->timestamp
#define RAW_key f->p_key, f->klen
#define RAW_value f->p_val, f->vlen
#define RAW_headers 0
#define RAW_offset_delta f->off_delta
#define RAW_timestamp_delta f->ts_delta
#define RAW_size ((int64_t)(f->rend - f->start))

/* a key or value of a checked record (at d + at, n bytes; n < 0: null) */
static int
out_raw_bytes(Out *o, const unsigned char *d, Py_ssize_t at, int64_t n, int mode, PyObject *val_json)
{
    return n < 0 ? PUT_LIT(o, JSON_NULL) : out_bytes(o, d + at, (Py_ssize_t)n, NULL, mode, val_json);
}

static int
out_raw_record(Out *o, const unsigned char *d, const Fields *f, const Segments *sg, int mode, PyObject *val_json,
               PyObject *dumps)
{
    int rc;
    Py_ssize_t seg = 0;
#define WRITE_RAW(kind, slot, var) \
    if ((rc = out_put(o, sg->text[seg], sg->len[seg])) != 0 || (seg++, rc = RAW_##kind(RAW_##var)) != 0) \
        return rc;
    KD_RECORD_FIELDS(WRITE_RAW)
#undef WRITE_RAW
    if ((rc = out_put(o, sg->text[seg], sg->len[seg])) != 0 || (rc = PUT_LIT(o, REC_KEY_PAYLOAD)) != 0)
        return rc;
    return out_payloads(o, f->klen < 0 ? NULL : d + f->p_key, (Py_ssize_t)(f->klen < 0 ? 0 : f->klen),
                        f->vlen < 0 ? NULL : d + f->p_val, (Py_ssize_t)(f->vlen < 0 ? 0 : f->vlen));
}

static PyObject *
format_run(PyObject *self, PyObject *args)
{
    PyObject *data, *segs, *val_json, *dumps;
    Py_ssize_t pos, end, limit;
    long long base_offset, base_ts, max_ts;
    int log_append, mode;
    Py_buffer view;
    int opened = open_run(args, "OnnnLLLpOiOO", &view, &data, &pos, &end, &limit, &base_offset, &base_ts,
                          &max_ts, &log_append, &segs, &mode, &val_json, &dumps);
    if (opened <= 0)
        return not_opened(opened);
    Segments sg;
    if (!segments_from(segs, &sg)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const unsigned char *d = (const unsigned char *)view.buf;
    RunConsts k;
    consts_from(&k, base_offset, base_ts, max_ts, log_append);
    Out o = {NULL, 0, 0, sg.ascii};
    Py_ssize_t n = 0;
    Fields f;
    while (pos < end && n < limit) {
        int rc = parse_one(d, pos, end, &k, &f) < 0 ? 1
                 : out_raw_record(&o, d, &f, &sg, mode, val_json, dumps);
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


/* ---- the lines of a window of plain batches ------------------------------------------------------------- */

/* The lines of the records ``q`` keeps of the window batch at d[pos:pos + size] (its header ``w``); ``first``:
 * scratch for the batch's first segment.  0, -1 (exception), 1 (hand back) */
static int
out_window_records(Out *o, Out *first, const unsigned char *d, Py_ssize_t pos, Py_ssize_t size,
                   const WindowHeader *w, Py_ssize_t position, const Segments *by_type[2],
                   const char *after, Py_ssize_t after_len, const WindowBounds *q, int mode, PyObject *val_json,
                   PyObject *dumps)
{
    int64_t last_offset;
    if (__builtin_add_overflow(w->base_offset, (int64_t)w->last_offset_delta, &last_offset))
        return 1;
    if (!window_selected(w, last_offset, q))
        return 0;
    int log_append = (w->attributes & 0x08) != 0;
    Segments sg = *by_type[log_append];
    first->len = 0;
    if (out_put(first, sg.text[0], sg.len[0]) < 0 || out_i64(first, position) < 0
        || out_put(first, after, after_len) < 0)
        return -1;
    sg.text[0] = first->buf;
    sg.len[0] = first->len;
    RunConsts k;
    consts_from(&k, w->base_offset, w->base_ts, w->max_ts, log_append);
    Fields f;
    for (Py_ssize_t p = pos + WINDOW_HEADER, stop = pos + size; p < stop; p = f.rend) {
        if (parse_one(d, p, stop, &k, &f) < 0)
            return 1;  /* (the bytes changed since the window was checked) */
        if (!window_keeps(f.offset, f.timestamp, q))
            continue;
        int rc = out_raw_record(o, d, &f, &sg, mode, val_json, dumps);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static PyObject *
window_record_lines(PyObject *self, PyObject *args)
{
    PyObject *buf, *segs_create, *segs_append, *after_obj, *val_json, *dumps;
    Py_ssize_t pos, stop, base;
    int mode;
    WindowBounds q;
    Py_buffer view;
    int opened = open_run(args, "OnnnOOUiOO(LLLL)", &view, &buf, &pos, &stop, &base, &segs_create, &segs_append,
                          &after_obj, &mode, &val_json, &dumps, &q.from_offset, &q.to_offset, &q.from_time,
                          &q.to_time);
    if (opened <= 0)
        return not_opened(opened);
    Segments create, append;
    Py_ssize_t after_len;
    const char *after = NULL;
    if (!segments_from(segs_create, &create) || !segments_from(segs_append, &append)
        || (after = PyUnicode_AsUTF8AndSize(after_obj, &after_len)) == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    const Segments *by_type[2] = {&create, &append};
    const unsigned char *d = (const unsigned char *)view.buf;
    Out o = {NULL, 0, 0, create.ascii && append.ascii && PyUnicode_IS_ASCII(after_obj)};
    Out first = {NULL, 0, 0, 1};
    int rc = 0;
    while (pos < stop && rc == 0) {
        WindowHeader w;
        if (stop - pos < WINDOW_HEADER || d[pos + 16] != 2) {
            rc = 1;
            break;
        }
        window_header(d + pos, &w);
        Py_ssize_t size = (Py_ssize_t)w.length + 12;
        if (size < WINDOW_HEADER || size > stop - pos) {
            rc = 1;
            break;
        }
        rc = out_window_records(&o, &first, d, pos, size, &w, base + pos, by_type, after, after_len, &q, mode,
                                val_json, dumps);
        pos += size;
    }
    PyMem_Free(first.buf);
    PyBuffer_Release(&view);
    return out_result(&o, rc);
}

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "Take Record's slot layout (call once, with decode.model.Record)."},
    {"format_lines", format_lines, METH_VARARGS, "JSON lines of a list of v2 records (None: hand back)."},
    {"window_record_lines", window_record_lines, METH_VARARGS, "JSON lines of a window of plain batches (None: hand back)."},
    {"format_run", format_run, METH_VARARGS, "JSON lines of a checked run, straight from its bytes (None: hand back)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.recordlines",
    "The compiled twin of the record lines of --json (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_recordlines(void)
{
    init_auto_class();
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", RECORDLINES_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
