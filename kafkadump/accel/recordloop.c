/* kafkadump.accel.recordloop: the compiled twin of the record loop of a plain v2 batch.
 *
 * The pure-Python code is the reference; every function here computes exactly what its Python twin
 * computes for the plain case and hands anything else back (returns None): the caller then runs the
 * Python code, which produces the findings.  So a damaged record, trailing bytes, an integer that
 * does not fit 64 bits or an object of an unexpected type never reach a finding from C.
 *
 *   configure(Record)                       Record's slot offsets (records are built without __init__)
 *   record_run(data, pos, end, n, stop_n, count, base_offset, base_ts, max_ts, log_append,
 *              ts_type, source, shift, last_offset_delta)
 *       twin of decode.batch.decode_record_run for a non-control batch without spans:
 *       None, or (records, pos, n, done, ordered, top)
 *   record_check(data, pos, end, count, base_offset, base_ts, max_ts, log_append, last_offset_delta)
 *       the same check of a plain run without making records: None, or (n, ordered, top)
 *
 * Every loop over a buffer starts with open_run (runs.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "record_slots.h"
#include "runs.h"
#include "recordparse.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define RECORDLOOP_INTERFACE 1

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

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure", configure, METH_O, "Take Record's slot layout (call once, with decode.model.Record)."},
    {"record_run", record_run, METH_VARARGS, "The record loop of a plain batch run (None: hand back)."},
    {"record_check", record_check, METH_VARARGS, "Check a plain batch's records without objects (None: hand back)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.recordloop",
    "The compiled twin of the record loop of a plain v2 batch (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_recordloop(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", RECORDLOOP_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
