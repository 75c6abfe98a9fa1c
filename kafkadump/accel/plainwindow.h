/* A window of plain v2 batches: the header of one read from its 61 bytes, and the batch and record
 * selection of an offset/time query, for the window check (batchstep.c's plain_window) and the lines
 * written from a checked window (batchlines.c's window_batch_lines, recordlines.c's window_record_lines).
 *
 * A window is what plain_window accepted: intact, uncompressed, non-control v2 batches whose records
 * are plain and agree with their header, in offset order.  The writers read it again from the bytes
 * and trust what the check found; a batch they cannot read as plain hands the whole window back.
 *
 * The query's bounds (reports.query.RecordQuery's offsets and times) are int64 with INT64_MIN / INT64_MAX
 * for "no bound": Python gives no window to a query whose bounds do not fit.
 * Include after <Python.h> and <stdint.h>. */
#ifndef KAFKADUMP_PLAINWINDOW_H
#define KAFKADUMP_PLAINWINDOW_H

#define WINDOW_HEADER 61

typedef struct {
    int64_t base_offset, base_ts, max_ts, producer_id;
    int32_t length, leader_epoch, last_offset_delta, base_sequence, count;
    uint32_t crc;
    unsigned attributes;
    int producer_epoch, magic;
} WindowHeader;

typedef struct {
    int64_t from_offset, to_offset, from_time, to_time;
} WindowBounds;

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

/* decode.batch.decode_batch_header's fields of the 61 bytes at h */
static inline void
window_header(const unsigned char *h, WindowHeader *w)
{
    w->base_offset = be64(h);
    w->length = (int32_t)be32(h + 8);
    w->leader_epoch = (int32_t)be32(h + 12);
    w->magic = (signed char)h[16];
    w->crc = be32(h + 17);
    w->attributes = ((unsigned)h[21] << 8) | h[22];
    w->last_offset_delta = (int32_t)be32(h + 23);
    w->base_ts = be64(h + 27);
    w->max_ts = be64(h + 35);
    w->producer_id = be64(h + 43);
    w->producer_epoch = (int16_t)(((unsigned)h[51] << 8) | h[52]);
    w->base_sequence = (int32_t)be32(h + 53);
    w->count = (int32_t)be32(h + 57);
}

/* reports.query.RecordQuery.batch_may_match of a v2 batch whose lastOffset is ``last_offset`` */
static inline int
window_selected(const WindowHeader *w, int64_t last_offset, const WindowBounds *q)
{
    if (last_offset < q->from_offset || w->base_offset > q->to_offset)
        return 0;
    return (w->attributes & 0x08) || w->max_ts >= q->from_time;
}

/* reports.query.RecordQuery.keeps of a record at ``offset`` and ``timestamp`` (no key asked for) */
static inline int
window_keeps(int64_t offset, int64_t timestamp, const WindowBounds *q)
{
    return offset >= q->from_offset && offset <= q->to_offset && timestamp >= q->from_time
           && timestamp <= q->to_time;
}

#endif
