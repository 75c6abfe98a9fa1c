/* kafkadump.accel.crchop: the compiled twin of verify-crc's hop over intact v2 batches.
 *
 * The pure-Python code (decode.walk.CrcScan) is the reference: the hop walks intact, plainly framed
 * v2 batches and stops at anything else, which the caller's Python loop then judges.
 *
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
 *
 * The loop over the buffer starts with open_run (runs.h).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "runs.h"
#include "crc32c.h"
#include "pycrc.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define CRCHOP_INTERFACE 1

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

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"crc_hop", crc_hop, METH_VARARGS, "Walk intact v2 batches: (stop position, batches, bytes)."},
    {"crc32c", crc32c, METH_VARARGS, "CRC-32C of a buffer, continuing a CRC (the crc32c package's crc32c)."},
    {"crc32c_codes", crc32c_code_names, METH_NOARGS, "The CRC-32C codes this CPU runs, the one in use first."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.crchop",
    "The compiled twin of verify-crc's hop and its CRC-32C (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_crchop(void)
{
    crc32c_setup();
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", CRCHOP_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
