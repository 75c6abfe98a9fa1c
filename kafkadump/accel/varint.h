/* The zig-zag varint reader the compiled modules use (recordparse.h, arrowcols.c): one definition.
 * Include after <Python.h> and <stdint.h>. */
#ifndef KAFKADUMP_VARINT_H
#define KAFKADUMP_VARINT_H

/* A zig-zag varint of at most ``max_bytes`` bytes (5: VARINT, 10: VARLONG) ending before ``bound``;
 * 0, or -1 for anything the Python decoder would not accept as it is (it then finds the problem). */
static inline int
read_varint(const unsigned char *d, Py_ssize_t *pos, Py_ssize_t bound, int max_bytes, int64_t *out)
{
    Py_ssize_t p = *pos;
    if (p < bound && d[p] < 0x80) {
        unsigned c = d[p];
        *out = (int64_t)(c >> 1) ^ -(int64_t)(c & 1);
        *pos = p + 1;
        return 0;
    }
    uint64_t u = 0;
    int shift = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p >= bound)
            return -1;
        unsigned b = d[p++];
        if (i == 9 && b > 1)
            return -1;  /* more than 64 bits, or longer than 10 bytes */
        u |= (uint64_t)(b & 0x7F) << shift;
        if (b < 0x80) {
            if (max_bytes == 5 && u > 0xFFFFFFFFull)
                return -1;
            *out = (int64_t)((u >> 1) ^ (0 - (u & 1)));
            *pos = p;
            return 0;
        }
        shift += 7;
    }
    return -1;
}

#endif
