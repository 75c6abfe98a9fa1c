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
 * The loop over the buffer starts with open_run (runs.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "batch_slots.h"
#include "runs.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define BATCHSTEP_INTERFACE 1

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
    {"configure_batch", configure_batch, METH_O, "Take Batch's slot layout (call once, with decode.model.Batch)."},
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
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", BATCHSTEP_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
