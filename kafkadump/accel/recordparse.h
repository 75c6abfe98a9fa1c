/* One v2 record checked in full (parse_one), for the record loop (recordloop.c) and the record lines
 * written straight from the bytes (recordlines.c): what decode.batch's record decoder accepts as plain.
 * Include after <Python.h> and <stdint.h>. */
#ifndef KAFKADUMP_RECORDPARSE_H
#define KAFKADUMP_RECORDPARSE_H

#include "varint.h"

typedef struct {
    PyObject *ts_type, *source, *zero_magic;
    int64_t base_offset, base_ts, max_ts;
    int log_append;
    Py_ssize_t shift;
} RunConsts;

/* The fields of one record, as parse_one found them. */
typedef struct {
    Py_ssize_t start, rend, p_key, p_val, hstart;
    int64_t ts_delta, off_delta, klen, vlen, hcount, offset, timestamp;
    unsigned attributes;
} Fields;

/* One record at d[start:end], checked in full: 0, or -1 for anything not plain (hand back). */
static int
parse_one(const unsigned char *d, Py_ssize_t start, Py_ssize_t end, const RunConsts *k, Fields *f)
{
    Py_ssize_t pos = start;
    int64_t length;
    f->start = start;
    if (read_varint(d, &pos, end, 5, &length) < 0)
        return -1;
    Py_ssize_t rend = pos + (Py_ssize_t)length;
    if (length < 6 || rend > end)
        return -1;
    f->rend = rend;
    f->attributes = d[pos++];
    if (read_varint(d, &pos, rend, 10, &f->ts_delta) < 0 || read_varint(d, &pos, rend, 5, &f->off_delta) < 0
        || read_varint(d, &pos, rend, 5, &f->klen) < 0)
        return -1;
    f->p_key = pos;
    if (f->klen >= 0) {
        if (f->klen > rend - pos)
            return -1;
        pos += (Py_ssize_t)f->klen;
    } else if (f->klen != -1)
        return -1;
    if (read_varint(d, &pos, rend, 5, &f->vlen) < 0)
        return -1;
    f->p_val = pos;
    if (f->vlen >= 0) {
        if (f->vlen > rend - pos)
            return -1;
        pos += (Py_ssize_t)f->vlen;
    } else if (f->vlen != -1)
        return -1;
    if (read_varint(d, &pos, rend, 5, &f->hcount) < 0)
        return -1;
    if (f->hcount < 0 || f->hcount > (rend - pos) / 2)
        return -1;
    f->hstart = pos;
    for (int64_t i = 0; i < f->hcount; i++) {
        int64_t hk, hv;
        if (read_varint(d, &pos, rend, 5, &hk) < 0 || hk < 0 || hk > rend - pos)
            return -1;
        pos += (Py_ssize_t)hk;
        if (read_varint(d, &pos, rend, 5, &hv) < 0)
            return -1;
        if (hv >= 0) {
            if (hv > rend - pos)
                return -1;
            pos += (Py_ssize_t)hv;
        } else if (hv != -1)
            return -1;
    }
    if (pos != rend)
        return -1;
    if (__builtin_add_overflow(k->base_offset, f->off_delta, &f->offset))
        return -1;
    if (k->log_append)
        f->timestamp = k->max_ts;
    else if (__builtin_add_overflow(k->base_ts, f->ts_delta, &f->timestamp))
        return -1;
    return 0;
}

static int
consts_from(RunConsts *k, long long base_offset, long long base_ts, long long max_ts, int log_append)
{
    k->ts_type = k->source = k->zero_magic = NULL;
    k->base_offset = base_offset;
    k->base_ts = base_ts;
    k->max_ts = max_ts;
    k->log_append = log_append;
    k->shift = 0;
    return 0;
}

#endif
