/* The slot layout of a class with __slots__ only (decode.model's Record and Batch), for the compiled
 * modules that read or make its objects without calling Python (record_slots.h, batch_slots.h).
 * Include after <Python.h>. */
#ifndef KAFKADUMP_SLOTS_H
#define KAFKADUMP_SLOTS_H

#include <structmember.h>

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

#endif
