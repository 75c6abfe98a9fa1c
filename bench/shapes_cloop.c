/* The limit of `kafkadump records --json --encoding base64` on plain segments: the least work that
 * writes the same lines, byte for byte.  For bench/shapes_bench.py only.
 *
 *   shapes_cloop FILE...   (the lines on stdout; exit 3 on anything but the plain case)
 *
 * Per batch: the header, CRC-32C of bytes 21..end compared with the stored one (kafkadump verifies
 * it), then per record its varints, key, value and headers, written as kafkadump's line (base64
 * for bytes).  The plain case only: v2 batches, uncompressed, no control batch, CreateTime, file
 * names and header keys that JSON writes as they are.  Anything else exits 3 (the benchmark runs
 * it on the generated shapes only and compares its output with kafkadump's before timing). */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#if defined(__SSE4_2__)
#include <nmmintrin.h>
#endif

static uint32_t crc_table[8][256];

static void crc_init(void) {
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        crc_table[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++)
        for (int t = 1; t < 8; t++) crc_table[t][n] = (crc_table[t - 1][n] >> 8) ^ crc_table[0][crc_table[t - 1][n] & 0xFF];
}

static uint32_t crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
#if defined(__SSE4_2__)
    uint64_t c64 = c;
    for (; n >= 8; n -= 8, p += 8) { uint64_t w; memcpy(&w, p, 8); c64 = _mm_crc32_u64(c64, w); }
    c = (uint32_t)c64;
    for (; n; n--, p++) c = _mm_crc32_u8(c, *p);
#else
    for (; n >= 8; n -= 8, p += 8) {
        uint32_t lo, hi; memcpy(&lo, p, 4); memcpy(&hi, p + 4, 4); lo ^= c;
        c = crc_table[7][lo & 0xFF] ^ crc_table[6][(lo >> 8) & 0xFF] ^ crc_table[5][(lo >> 16) & 0xFF] ^
            crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xFF] ^ crc_table[2][(hi >> 8) & 0xFF] ^
            crc_table[1][(hi >> 16) & 0xFF] ^ crc_table[0][hi >> 24];
    }
    for (; n; n--, p++) c = crc_table[0][(c ^ *p) & 0xFF] ^ (c >> 8);
#endif
    return c ^ 0xFFFFFFFFu;
}

static char *out, *o;
static size_t out_cap;

static void flush(void) { fwrite(out, 1, (size_t)(o - out), stdout); o = out; }
static void need(size_t n) { if ((size_t)(o - out) + n > out_cap) flush(); if (n > out_cap) exit(3); }
static void put(const char *s, size_t n) { need(n); memcpy(o, s, n); o += n; }
#define PUTS(s) put(s, sizeof(s) - 1)
static void put_i64(int64_t v) { need(24); o += sprintf(o, "%lld", (long long)v); }

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void put_b64(const uint8_t *p, int64_t n) {
    if (n < 0) { PUTS("null"); return; }
    need(4 * ((size_t)n / 3 + 1) + 2);
    *o++ = '"';
    int64_t i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8 | p[i + 2];
        o[0] = B64[v >> 18]; o[1] = B64[(v >> 12) & 63]; o[2] = B64[(v >> 6) & 63]; o[3] = B64[v & 63]; o += 4;
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)p[i] << 16;
        o[0] = B64[v >> 18]; o[1] = B64[(v >> 12) & 63]; o[2] = '='; o[3] = '='; o += 4;
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)p[i] << 16 | (uint32_t)p[i + 1] << 8;
        o[0] = B64[v >> 18]; o[1] = B64[(v >> 12) & 63]; o[2] = B64[(v >> 6) & 63]; o[3] = '='; o += 4;
    }
    *o++ = '"';
}

static void put_plain_text(const uint8_t *p, size_t n) {  /* JSON text that needs no escape, else exit 3 */
    for (size_t i = 0; i < n; i++) if (p[i] < 0x20 || p[i] >= 0x7F || p[i] == '"' || p[i] == '\\') exit(3);
    need(n + 2); *o++ = '"'; memcpy(o, p, n); o += n; *o++ = '"';
}

static int64_t varlong(const uint8_t **pp, const uint8_t *end) {
    uint64_t v = 0; int shift = 0; const uint8_t *p = *pp;
    for (;;) {
        if (p >= end || shift > 63) exit(3);
        uint8_t b = *p++;
        v |= (uint64_t)(b & 0x7F) << shift;
        if (!(b & 0x80)) break;
        shift += 7;
    }
    *pp = p;
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static uint32_t be32(const uint8_t *p) { return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3]; }
static uint64_t be64(const uint8_t *p) { return (uint64_t)be32(p) << 32 | be32(p + 4); }

static void file_records(const char *path, const uint8_t *buf, size_t size) {
    size_t plen = strlen(path);
    size_t pos = 0;
    while (pos + 61 <= size) {
        const uint8_t *b = buf + pos;
        int64_t base = (int64_t)be64(b);
        int32_t length = (int32_t)be32(b + 8);
        if (length < 49 || pos + 12 + (size_t)length > size || b[16] != 2) exit(3);
        uint16_t attrs = (uint16_t)(b[21] << 8 | b[22]);
        if ((attrs & 0x07) || (attrs & 0x20) || (attrs & 0x08)) exit(3);  /* compressed, control, LogAppendTime */
        if (crc32c(b + 21, (size_t)length - 9) != be32(b + 17)) exit(3);
        int64_t first_ts = (int64_t)be64(b + 27);
        int32_t count = (int32_t)be32(b + 57);
        const uint8_t *p = b + 61, *end = b + 12 + length;
        for (int32_t i = 0; i < count; i++) {
            int64_t len = varlong(&p, end);
            const uint8_t *rend = p + len;
            if (len < 0 || rend > end) exit(3);
            p++;  /* attributes */
            int64_t ts_delta = varlong(&p, rend), off_delta = varlong(&p, rend);
            int64_t klen = varlong(&p, rend); const uint8_t *key = p; if (klen > 0) p += klen;
            int64_t vlen = varlong(&p, rend); const uint8_t *value = p; if (vlen > 0) p += vlen;
            int64_t nh = varlong(&p, rend);
            PUTS("{\"type\":\"record\",\"file\":"); put_plain_text((const uint8_t *)path, plen);
            PUTS(",\"topic\":null,\"partition\":null,\"batchPosition\":"); put_i64((int64_t)pos);
            PUTS(",\"offset\":"); put_i64(base + off_delta);
            PUTS(",\"timestamp\":"); put_i64(first_ts + ts_delta);
            PUTS(",\"timestampType\":\"CreateTime\",\"key\":"); put_b64(key, klen);
            PUTS(",\"value\":"); put_b64(value, vlen);
            PUTS(",\"headers\":[");
            for (int64_t h = 0; h < nh; h++) {
                int64_t hk = varlong(&p, rend); if (hk < 0 || p + hk > rend) exit(3);
                PUTS(h ? ",{\"key\":" : "{\"key\":"); put_plain_text(p, (size_t)hk); p += hk;
                int64_t hv = varlong(&p, rend); PUTS(",\"value\":"); put_b64(p, hv); if (hv > 0) p += hv;
                PUTS("}");
            }
            PUTS("],\"offsetDelta\":"); put_i64(off_delta);
            PUTS(",\"timestampDelta\":"); put_i64(ts_delta);
            PUTS(",\"control\":null,\"keyPayload\":{\"framing\":null},\"valuePayload\":{\"framing\":null}}\n");
            if (p != rend) exit(3);
        }
        pos += 12 + (size_t)length;
    }
    if (pos != size) exit(3);
}

int main(int argc, char **argv) {
    crc_init();
    out_cap = 8u << 20;
    out = o = malloc(out_cap);
    for (int i = 1; i < argc; i++) {
        int fd = open(argv[i], O_RDONLY);
        struct stat st;
        if (fd < 0 || fstat(fd, &st) < 0) return 2;
        if (st.st_size > 0) {
            const uint8_t *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
            if (m == MAP_FAILED) return 2;
            file_records(argv[i], m, (size_t)st.st_size);
            munmap((void *)m, (size_t)st.st_size);
        }
        close(fd);
    }
    flush();
    return 0;
}
