/* kafkadump.accel.batchlines: the compiled twin of the batch lines of batches --json.
 *
 * The pure-Python code (render.jsonl.python_batch_line) is the reference: batch_json writes the line
 * of a v2 batch without findings exactly as Python does and hands anything else back (returns None).
 * The literals the line holds are line_literals.h's.
 *
 *   configure_batch(Batch)                  Batch's slot offsets
 *   batch_json(batch, file_json)            (after configure_batch(Batch))
 *       twin of render.jsonl.batch_line for a v2 batch without findings: None, or its line
 *   window_batch_lines(buf, pos, stop, base, file_json)
 *       the lines of a window of plain batches (batchstep.plain_window's: intact, so each batch's
 *       computed CRC is its stored one), as batch_line writes them from their Batch objects: None, or
 *       the lines as one str (positions are ``base`` + position in ``buf``)
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include "batch_slots.h"
#include "runs.h"
#include "jsonout.h"
#include "line_literals.h"
#include "generated_fields.h"
#include "plainwindow.h"

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define BATCHLINES_INTERFACE 2

/* an int slot in C: 0, 1 (None), 2 (neither None nor an exact int of 64 bits: hand back), -1 (error) */
static int
slot_int(PyObject *v, long long *x)
{
    if (v == Py_None)
        return 1;
    if (v == NULL || !PyLong_CheckExact(v))
        return 2;
    int overflow;
    *x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (overflow)
        return 2;
    return (*x == -1 && PyErr_Occurred()) ? -1 : 0;
}

/* the header integers a batch line holds after its file's fields, in order, each after its label: the
 * field registry's (generated_fields.h); the fields after them are computed in out_batch */
static const struct {
    const char *label;
    int slot;
} BATCH_INTS[] = {
#define BATCH_INT(label, slot) {label, slot},
    KD_BATCH_INTS(BATCH_INT)
#undef BATCH_INT
};
#define N_BATCH_INTS ((int)(sizeof BATCH_INTS / sizeof BATCH_INTS[0]))

/* decode.compression.CODEC_NAMES (and Batch.compression's "unknown(N)"), as JSON */
static const char *const CODEC_JSON[8] = {
    BATCH_CODEC_0, BATCH_CODEC_1, BATCH_CODEC_2, BATCH_CODEC_3, BATCH_CODEC_4, BATCH_CODEC_5, BATCH_CODEC_6, BATCH_CODEC_7,
};

static inline int
out_cstr(Out *o, const char *s)
{
    return out_put(o, s, (Py_ssize_t)strlen(s));
}

static inline int
out_bool(Out *o, int b)
{
    return b ? PUT_LIT(o, JSON_TRUE) : PUT_LIT(o, JSON_FALSE);
}

/* an int or None (the other cases are handed back before) */
static inline int
out_opt(Out *o, int none, long long x)
{
    return none ? PUT_LIT(o, JSON_NULL) : out_i64(o, x);
}

/* Batch.last_sequence of an int baseSequence and lastOffsetDelta: their sum wrapped past INT32_MAX,
 * or -1 / None without a sequence.  0 (*x set), 1 (None), 2 (hand back: past 64 bits) */
static int
last_sequence(long long bseq, long long lod, long long *x)
{
    *x = -1;
    if (bseq < 0)
        return bseq == -1 ? 0 : 1;
    if (__builtin_add_overflow(bseq, lod, x))
        return 2;
    if (*x > 0x7FFFFFFFLL)
        *x -= 1LL << 31;
    return 0;
}

/* The line of a batch from its header integers ``v`` (by slot; ``none``: which are None), without
 * findings; 0, -1 (exception), 1 (hand back: Python writes it) */
static int
out_batch_values(Out *o, const long long *v, const int *none, PyObject *file_json)
{
    for (int i = 0; i < N_BATCH_INTS; i++)
        if (none[BATCH_INTS[i].slot])
            return 1;  /* a header field of None: Python writes what it writes */
    long long last_offset, last_seq, a = v[B_ATTRIBUTES];
    int ls = last_sequence(v[B_BASE_SEQUENCE], v[B_LAST_OFFSET_DELTA], &last_seq);
    if (ls == 2 || v[B_MAGIC] < 2 || a < 0
        || __builtin_add_overflow(v[B_BASE_OFFSET], v[B_LAST_OFFSET_DELTA], &last_offset))
        return 1;  /* (Batch.last_offset and timestampType differ below magic 2) */
    int rc;
    if ((rc = PUT_LIT(o, BATCH_START)) != 0 || (rc = out_str(o, file_json)) != 0)
        return rc;
    for (int i = 0; i < N_BATCH_INTS; i++)
        if ((rc = out_cstr(o, BATCH_INTS[i].label)) != 0 || (rc = out_i64(o, v[BATCH_INTS[i].slot])) != 0)
            return rc;
    int crc_none = none[B_COMPUTED_CRC];
    if ((rc = PUT_LIT(o, BATCH_LAST_OFFSET)) != 0 || (rc = out_i64(o, last_offset)) != 0
        || (rc = PUT_LIT(o, BATCH_LAST_SEQUENCE)) != 0 || (rc = out_opt(o, ls, last_seq)) != 0
        || (rc = PUT_LIT(o, BATCH_COMPRESSION)) != 0 || (rc = out_cstr(o, CODEC_JSON[a & 7])) != 0
        || (rc = ((a >> 3) & 1 ? PUT_LIT(o, BATCH_TIMESTAMP_TYPE_LOG_APPEND)
                               : PUT_LIT(o, BATCH_TIMESTAMP_TYPE_CREATE))) != 0
        || (rc = PUT_LIT(o, BATCH_IS_TRANSACTIONAL)) != 0 || (rc = out_bool(o, a & 0x10)) != 0
        || (rc = PUT_LIT(o, BATCH_IS_CONTROL_BATCH)) != 0 || (rc = out_bool(o, a & 0x20)) != 0
        || (rc = PUT_LIT(o, BATCH_HAS_DELETE_HORIZON_MS)) != 0 || (rc = out_bool(o, a & 0x40)) != 0
        || (rc = PUT_LIT(o, BATCH_CRC_VALID)) != 0
        || (rc = crc_none ? PUT_LIT(o, JSON_NULL) : out_bool(o, v[B_CRC] == v[B_COMPUTED_CRC])) != 0
        || (rc = PUT_LIT(o, BATCH_COMPUTED_CRC)) != 0 || (rc = out_opt(o, crc_none, v[B_COMPUTED_CRC])) != 0)
        return rc;
    if (!none[B_DECOMPRESSED_SIZE]
        && ((rc = PUT_LIT(o, BATCH_DECOMPRESSED_SIZE)) != 0 || (rc = out_i64(o, v[B_DECOMPRESSED_SIZE])) != 0))
        return rc;
    return PUT_LIT(o, BATCH_END);
}

/* The line of a batch without findings; 0, -1 (exception), 1 (hand back: Python writes it) */
static int
out_batch(Out *o, PyObject *b, PyObject *file_json)
{
    long long v[B_NSLOTS];
    int none[B_NSLOTS];
    /* the header integers, and those the fields after them are computed from */
    static const int derived[] = {B_MAGIC, B_BASE_OFFSET, B_CRC, B_COMPUTED_CRC, B_ATTRIBUTES, B_LAST_OFFSET_DELTA,
                                  B_BASE_SEQUENCE, B_DECOMPRESSED_SIZE};
    for (int i = 0; i < N_BATCH_INTS + (int)(sizeof derived / sizeof derived[0]); i++) {
        int slot = i < N_BATCH_INTS ? BATCH_INTS[i].slot : derived[i - N_BATCH_INTS];
        int rc = slot_int(BSLOT(b, slot), &v[slot]);
        if (rc < 0 || rc == 2)
            return rc < 0 ? -1 : 1;
        none[slot] = rc;
    }
    PyObject *findings = BSLOT(b, B_FINDINGS);
    if (findings == NULL || !PyList_CheckExact(findings) || PyList_GET_SIZE(findings) != 0)
        return 1;
    return out_batch_values(o, v, none, file_json);
}

/* The line of the window batch at h (its header: what decode_batch_header makes of it) */
static int
out_window_batch(Out *o, const unsigned char *h, Py_ssize_t position, PyObject *file_json)
{
    WindowHeader w;
    window_header(h, &w);
    long long v[B_NSLOTS];
    int none[B_NSLOTS] = {0};
    v[B_POSITION] = position;
    v[B_SIZE] = (long long)w.length + 12;
    v[B_MAGIC] = w.magic;
    v[B_BASE_OFFSET] = w.base_offset;
    v[B_BATCH_LENGTH] = w.length;
    v[B_LEADER_EPOCH] = w.leader_epoch;
    v[B_CRC] = v[B_COMPUTED_CRC] = w.crc;  /* (the window's batches are intact) */
    v[B_ATTRIBUTES] = w.attributes;
    v[B_LAST_OFFSET_DELTA] = w.last_offset_delta;
    v[B_BASE_TIMESTAMP] = w.base_ts;
    v[B_MAX_TIMESTAMP] = w.max_ts;
    v[B_PRODUCER_ID] = w.producer_id;
    v[B_PRODUCER_EPOCH] = w.producer_epoch;
    v[B_BASE_SEQUENCE] = w.base_sequence;
    v[B_RECORD_COUNT] = w.count;
    none[B_DECOMPRESSED_SIZE] = 1;
    return out_batch_values(o, v, none, file_json);
}

static PyObject *
window_batch_lines(PyObject *self, PyObject *args)
{
    PyObject *buf, *file_json;
    Py_ssize_t pos, stop, base;
    Py_buffer view;
    int opened = open_run(args, "OnnnU", &view, &buf, &pos, &stop, &base, &file_json);
    if (opened <= 0)
        return not_opened(opened);
    const unsigned char *d = (const unsigned char *)view.buf;
    Out o = {NULL, 0, 0, 1};
    int rc = 0;
    while (pos < stop && rc == 0) {
        if (stop - pos < WINDOW_HEADER || d[pos + 16] != 2) {
            rc = 1;
            break;
        }
        Py_ssize_t size = (Py_ssize_t)(int32_t)be32(d + pos + 8) + 12;
        if (size < WINDOW_HEADER || size > stop - pos) {
            rc = 1;
            break;
        }
        if ((rc = out_window_batch(&o, d + pos, base + pos, file_json)) == 0)
            rc = PUT_LIT(&o, "\n");
        pos += size;
    }
    PyBuffer_Release(&view);
    return out_result(&o, rc);
}

static PyObject *
batch_json(PyObject *self, PyObject *args)
{
    PyObject *b, *file_json;
    if (!PyArg_ParseTuple(args, "OU", &b, &file_json))
        return NULL;
    if (batch_type == NULL || Py_TYPE(b) != batch_type)
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0, 1};
    return out_result(&o, out_batch(&o, b, file_json));
}

/* ---- module ----------------------------------------------------------------------------------- */

static PyMethodDef methods[] = {
    {"configure_batch", configure_batch, METH_O, "Take Batch's slot layout (call once, with decode.model.Batch)."},
    {"window_batch_lines", window_batch_lines, METH_VARARGS, "The lines of a window of plain batches (None: hand back)."},
    {"batch_json", batch_json, METH_VARARGS, "A v2 batch's JSON line without findings (None: hand back)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.batchlines",
    "The compiled twin of the batch lines of batches --json (the pure-Python code is the reference).", -1, methods,
};

PyMODINIT_FUNC
PyInit_batchlines(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", BATCHLINES_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
