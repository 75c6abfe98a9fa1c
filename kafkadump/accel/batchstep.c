/* kafkadump.accel.batchstep: the compiled twin of the walk's step over an intact plain v2 batch.
 *
 * The pure-Python code (decode.step.decode_at) is the reference: batch_hop takes an intact,
 * uncompressed, non-control v2 batch with a sane header and hands anything else back (returns None),
 * and the Python step then judges it.
 *
 *   configure_batch(Batch)                  Batch's slot offsets (batch_hop makes batches without __init__)
 *   batch_hop(buf, pos, end, max_length, copy_max, crc32c, file, position)     (after configure_batch)
 *       None, or (its Batch as decode.batch.decode_batch_header makes it, its CRC-32C set; a copy of
 *       its bytes)
 *
 *   plain_window(buf, pos, end, until, max_length, records, prev_last, bounds, crc32c)
 *       the walk (decode.walk.iter_batches) over a window of plain batches from ``pos``: intact,
 *       uncompressed, non-control v2 batches of at most ``max_length`` bytes, starting before ``until``,
 *       in offset order after ``prev_last`` (None: the first), their records (``records``; those of the
 *       batches ``bounds`` select: (from_offset, to_offset, from_time, to_time), int64) plain and agreeing
 *       with the header: everything on which the walk would have nothing to say.  None when the batch at
 *       ``pos`` is not one (the Python step judges it), else (next, batches, records, lastOffset of the
 *       last).  CRC-32C by crc32c.h, or by ``crc32c`` where crc32c.h has only its tables (slower than
 *       the crc32c package's hardware code: as crchop's crc_hop is given it then).
 *
 * The loops over the buffer start with open_run (runs.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "batch_slots.h"
#include "runs.h"
#include "recordparse.h"
#include "crc32c.h"
#include "pycrc.h"
#include "plainwindow.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define BATCHSTEP_INTERFACE 2

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


/* ---- a window of plain batches ---------------------------------------------------------------------- */

/* The records of a selected batch at d[start:stop] checked as compiled_records and _check_records would
 * find nothing to say: their number (the header's), or -1 (not plain, or a finding: hand back). */
static Py_ssize_t
window_records(const unsigned char *d, Py_ssize_t pos, Py_ssize_t stop, const WindowHeader *w)
{
    int log_append = (w->attributes & 0x08) != 0;
    RunConsts k;
    consts_from(&k, w->base_offset, w->base_ts, w->max_ts, log_append);
    Py_ssize_t n = 0;
    int64_t prev = -1, top = 0;
    Fields f;
    while (pos < stop) {
        if (n >= w->count || parse_one(d, pos, stop, &k, &f) < 0)
            return -1;  /* trailing bytes, or not plain */
        if (f.off_delta <= prev || f.off_delta > w->last_offset_delta)
            return -1;  /* (offset-delta-mismatch) */
        prev = f.off_delta;
        if (n == 0 || f.timestamp > top)
            top = f.timestamp;
        pos = f.rend;
        n++;
    }
    if (n != w->count)
        return -1;  /* (record-count-mismatch) */
    /* (timestamp-mismatch: decode.batch._timestamp_check of a complete batch) */
    if (n && top != w->max_ts && !log_append && !(w->attributes & 0x40))
        return -1;
    return n;
}

/* The batch at d[pos:end] if it belongs to a window (see plain_window): its size, or 0 (hand back),
 * or -1 (crc_fn raised). *last: its lastOffset; *records: its records checked. */
static Py_ssize_t
window_batch(const unsigned char *d, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t max_length, int records,
             const int64_t *prev_last, const WindowBounds *q, PyObject *crc_fn, int64_t *last, Py_ssize_t *nrec)
{
    const unsigned char *h = d + pos;
    if (end - pos < WINDOW_HEADER || h[16] != 2)
        return 0;
    WindowHeader w;
    window_header(h, &w);
    Py_ssize_t size = (Py_ssize_t)w.length + 12;
    if (w.length < 49 || w.length > max_length || size > end - pos)
        return 0;
    unsigned a = w.attributes;
    if ((a & 0xFF80) || (a & 0x07) || (a & 0x20) || w.count < 0 || (w.count > 0 && w.last_offset_delta < 0))
        return 0;
    if (__builtin_add_overflow(w.base_offset, (int64_t)w.last_offset_delta, last))
        return 0;
    if (prev_last != NULL && w.base_offset <= *prev_last)
        return 0;  /* (offset-order) */
    uint32_t computed;
    if (crc_fn == NULL)
        computed = kafkadump_crc32c(0, h + 21, (size_t)(size - 21));
    else {
        int64_t c = python_crc(crc_fn, h + 21, size - 21);
        if (c < 0)
            return -1;
        computed = (uint32_t)c;
    }
    if (computed != w.crc)
        return 0;
    *nrec = 0;
    if (records && window_selected(&w, *last, q)) {
        *nrec = window_records(d, pos + WINDOW_HEADER, pos + size, &w);
        if (*nrec < 0)
            return 0;
    }
    return size;
}

static PyObject *
plain_window(PyObject *self, PyObject *args)
{
    PyObject *buf, *prev_obj, *crc_fn;
    Py_ssize_t pos, end, until, max_length;
    int records;
    WindowBounds q;
    Py_buffer view;
    int opened = open_run(args, "OnnnnpO(LLLL)O", &view, &buf, &pos, &end, &until, &max_length, &records,
                          &prev_obj, &q.from_offset, &q.to_offset, &q.from_time, &q.to_time, &crc_fn);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    int64_t prev = 0, last = 0;
    int has_prev = prev_obj != Py_None;
    if (has_prev) {
        int overflow;
        prev = PyLong_AsLongLongAndOverflow(prev_obj, &overflow);
        if (overflow || (prev == -1 && PyErr_Occurred())) {
            PyBuffer_Release(&view);
            if (PyErr_Occurred())
                return NULL;
            Py_RETURN_NONE;
        }
    }
    Py_ssize_t start = pos, batches = 0, nrecords = 0;
    /* crc32c.h's own code, unless it has only its tables (slower than the package's hardware code) */
    int own_crc = crc_fn == Py_None || crc32c_raw != crc32c_portable;
    while (pos < until) {
        Py_ssize_t n = 0;
        Py_ssize_t size = window_batch(d, pos, end, max_length, records, has_prev ? &prev : NULL, &q,
                                       own_crc ? NULL : crc_fn, &last, &n);
        if (size < 0) {
            PyBuffer_Release(&view);
            return NULL;
        }
        if (size == 0)
            break;
        pos += size;
        batches++;
        nrecords += n;
        prev = last;
        has_prev = 1;
    }
    PyBuffer_Release(&view);
    if (pos == start)
        Py_RETURN_NONE;
    return Py_BuildValue("(nnnL)", pos, batches, nrecords, (long long)prev);
}

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure_batch", configure_batch, METH_O, "Take Batch's slot layout (call once, with decode.model.Batch)."},
    {"plain_window", plain_window, METH_VARARGS, "A window of plain batches: (next, batches, records, lastOffset) or None."},
    {"batch_hop", batch_hop, METH_VARARGS, "An intact, uncompressed, non-control v2 batch: (its Batch, its bytes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.batchstep",
    "The compiled twin of the walk's step over an intact plain v2 batch (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_batchstep(void)
{
    crc32c_setup();
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", BATCHSTEP_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
