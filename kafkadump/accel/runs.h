/* The start of every compiled loop over a buffer: its arguments, a view of the buffer, the bounds.
 * Include after <Python.h>. */
#ifndef KAFKADUMP_RUNS_H
#define KAFKADUMP_RUNS_H

#include <stdarg.h>

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

#endif
