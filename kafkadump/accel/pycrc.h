/* A batch's CRC-32C by a Python function (the crc32c package's), for the compiled loops that call it
 * where crc32c.h has only its tables (crchop.c, batchstep.c).  Include after <Python.h> and <stdint.h>. */
#ifndef KAFKADUMP_PYCRC_H
#define KAFKADUMP_PYCRC_H

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

#endif
