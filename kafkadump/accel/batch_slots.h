/* decode.model.Batch's slots, and configure_batch(Batch), which takes their offsets (batches are made
 * and read without __init__).  Each module that includes this header has its own copy: call its
 * configure_batch.  Include after <Python.h>. */
#ifndef KAFKADUMP_BATCH_SLOTS_H
#define KAFKADUMP_BATCH_SLOTS_H

#include <string.h>
#include "slots.h"

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

#endif
