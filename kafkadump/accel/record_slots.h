/* decode.model.Record's slots, and configure(Record), which takes their offsets (records are built and
 * read without __init__).  Each module that includes this header has its own copy: call its configure.
 * Include after <Python.h>. */
#ifndef KAFKADUMP_RECORD_SLOTS_H
#define KAFKADUMP_RECORD_SLOTS_H

#include <string.h>
#include "slots.h"

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

#endif
