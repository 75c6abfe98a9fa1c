/* CRC-32C (Castagnoli), the checksum of v2 record batches, for verify-crc's compiled hop (crchop.c).
 *
 * kafkadump_crc32c(value, data, n) is what the crc32c package's crc32c(data, value) returns: the
 * finished CRC of ``data`` continuing a finished CRC ``value`` (0 to start).  Which code runs is chosen
 * once, at run time (crc32c_setup):
 *   - x86-64 with SSE4.2 and PCLMULQDQ: four 16-byte lanes folded forward by carry-less multiplication
 *     (64 bytes a round), the lanes folded into one and that one reduced with the crc32 instruction,
 *     which also takes the last bytes (fewer than 64).  The hardware crc32 instruction alone is slower
 *     on some cores than the multiplier (one instruction every few cycles), so the multiplier does the
 *     bulk everywhere.
 *   - x86-64 with SSE4.2 only: the crc32 instruction, eight bytes at a time.
 *   - anything else: slicing-by-8 tables (little-endian hosts; byte by byte on others).  Built with
 *     KAFKADUMP_CRC32C_PORTABLE defined, only these (to check that build on an x86-64 machine).
 * The folding constants and the tables are computed by crc32c_setup from the polynomial (nothing is
 * copied in), and tests/test_compiled_twins.py checks every path against the crc32c package.
 *
 * The math, in the reflected bit order the crc32 instruction uses (bit 0 of the first byte is the
 * highest power of x): the carry-less product of a 64-bit value (coefficient of x^(63-i) in bit i) and
 * a constant holding x * c(x) (c of degree below 32, x^(31-j) in bit j + 32) is the 128-bit value of
 * their product in the same order.  A 16-byte lane H || L (H its first eight bytes) stands for
 * H * x^64 + L; moved D bits forward it is H * x^(D+64) + L * x^D, congruent mod P to
 * H * x * (x^(D+63) mod P) + L * x * (x^(D-1) mod P): those two constants, each shifted left 32 bits, are
 * the multipliers, and the sum is a lane of the same shape, XORed into the data D bits on.  The last
 * lane is then 16 bytes of message after a state of 0: the crc32 instruction finishes it.  Each
 * function computes the raw state (no pre- or post-inversion).  Include after <stdint.h> and <string.h>. */
#ifndef KAFKADUMP_CRC32C_H
#define KAFKADUMP_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define CRC32C_POLY 0x82F63B78u  /* x^32 + x^28 + x^27 + ... + 1, reflected */

static uint32_t crc32c_table[8][256];  /* [k][b]: the state after byte b, then k zero bytes */

/* the raw state (no pre- and post-inversion) after ``n`` bytes at ``p``, from ``crc``: tables */
static uint32_t
crc32c_portable(uint32_t crc, const unsigned char *p, size_t n)
{
#if defined(__BYTE_ORDER__) && defined(__ORDER_LITTLE_ENDIAN__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        w ^= crc;
        crc = crc32c_table[7][w & 0xff] ^ crc32c_table[6][(w >> 8) & 0xff] ^ crc32c_table[5][(w >> 16) & 0xff]
              ^ crc32c_table[4][(w >> 24) & 0xff] ^ crc32c_table[3][(w >> 32) & 0xff]
              ^ crc32c_table[2][(w >> 40) & 0xff] ^ crc32c_table[1][(w >> 48) & 0xff] ^ crc32c_table[0][w >> 56];
        p += 8;
        n -= 8;
    }
#endif
    while (n--)
        crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if (defined(__x86_64__) || defined(_M_X64)) && (defined(__GNUC__) || defined(__clang__)) && !defined(KAFKADUMP_CRC32C_PORTABLE)
#define CRC32C_X86 1
#include <immintrin.h>

/* x^e mod P, reflected (bit 31 is x^0) */
static uint32_t
crc32c_xpow(unsigned e)
{
    uint32_t r = 0x80000000u;
    while (e--)
        r = (r & 1) ? (r >> 1) ^ CRC32C_POLY : r >> 1;
    return r;
}

/* the two 64-bit multipliers folding a 16-byte lane D bits forward: {H's, L's} */
static uint64_t crc32c_fold512[2], crc32c_fold128[2];

__attribute__((target("sse4.2")))
static uint32_t
crc32c_sse42(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c = crc;
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c = _mm_crc32_u64(c, w);
        p += 8;
        n -= 8;
    }
    crc = (uint32_t)c;
    while (n--)
        crc = _mm_crc32_u8(crc, *p++);
    return crc;
}

__attribute__((target("sse4.2,pclmul")))
static inline __m128i
crc32c_fold(__m128i lane, __m128i k)
{
    return _mm_xor_si128(_mm_clmulepi64_si128(lane, k, 0x00), _mm_clmulepi64_si128(lane, k, 0x11));
}

#define CRC32C_LANE(q) _mm_loadu_si128((const __m128i *)(q))

__attribute__((target("sse4.2,pclmul")))
static uint32_t
crc32c_pclmul(uint32_t crc, const unsigned char *p, size_t n)
{
    if (n < 128)
        return crc32c_sse42(crc, p, n);
    const __m128i k512 = _mm_set_epi64x((long long)crc32c_fold512[1], (long long)crc32c_fold512[0]);
    const __m128i k128 = _mm_set_epi64x((long long)crc32c_fold128[1], (long long)crc32c_fold128[0]);
    /* the state goes into the first four bytes: what the crc32 instruction does with it */
    __m128i x0 = _mm_xor_si128(CRC32C_LANE(p), _mm_cvtsi32_si128((int)crc));
    __m128i x1 = CRC32C_LANE(p + 16), x2 = CRC32C_LANE(p + 32), x3 = CRC32C_LANE(p + 48);
    p += 64;
    n -= 64;
    while (n >= 64) {
        x0 = _mm_xor_si128(crc32c_fold(x0, k512), CRC32C_LANE(p));
        x1 = _mm_xor_si128(crc32c_fold(x1, k512), CRC32C_LANE(p + 16));
        x2 = _mm_xor_si128(crc32c_fold(x2, k512), CRC32C_LANE(p + 32));
        x3 = _mm_xor_si128(crc32c_fold(x3, k512), CRC32C_LANE(p + 48));
        p += 64;
        n -= 64;
    }
    x1 = _mm_xor_si128(x1, crc32c_fold(x0, k128));
    x2 = _mm_xor_si128(x2, crc32c_fold(x1, k128));
    x3 = _mm_xor_si128(x3, crc32c_fold(x2, k128));
    /* the one lane left is the next 16 bytes of a message whose state is 0 */
    uint64_t c = _mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(x3));
    c = _mm_crc32_u64(c, (uint64_t)_mm_extract_epi64(x3, 1));
    return crc32c_sse42((uint32_t)c, p, n);
}
#endif

typedef uint32_t (*crc32c_fn)(uint32_t, const unsigned char *, size_t);

/* the codes this CPU runs, fastest first (crc32c_setup fills it; the last is always the tables) */
static struct {
    const char *name;
    crc32c_fn fn;
} crc32c_codes[3];
static int crc32c_ncodes = 0;
static crc32c_fn crc32c_raw = crc32c_portable;

/* the tables and constants, and the fastest code this CPU runs; call once before kafkadump_crc32c */
static void
crc32c_setup(void)
{
    for (unsigned b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc32c_table[0][b] = c;
    }
    for (unsigned b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            crc32c_table[k][b] = crc32c_table[0][crc32c_table[k - 1][b] & 0xff] ^ (crc32c_table[k - 1][b] >> 8);
    crc32c_ncodes = 0;
#ifdef CRC32C_X86
    crc32c_fold512[0] = (uint64_t)crc32c_xpow(512 + 63) << 32;
    crc32c_fold512[1] = (uint64_t)crc32c_xpow(512 - 1) << 32;
    crc32c_fold128[0] = (uint64_t)crc32c_xpow(128 + 63) << 32;
    crc32c_fold128[1] = (uint64_t)crc32c_xpow(128 - 1) << 32;
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        if (__builtin_cpu_supports("pclmul")) {
            crc32c_codes[crc32c_ncodes].name = "sse4.2+pclmul";
            crc32c_codes[crc32c_ncodes++].fn = crc32c_pclmul;
        }
        crc32c_codes[crc32c_ncodes].name = "sse4.2";
        crc32c_codes[crc32c_ncodes++].fn = crc32c_sse42;
    }
#endif
    crc32c_codes[crc32c_ncodes].name = "table";
    crc32c_codes[crc32c_ncodes++].fn = crc32c_portable;
    crc32c_raw = crc32c_codes[0].fn;
}

/* the crc32c package's crc32c(data, value): ``value`` a finished CRC (0 to start) */
static inline uint32_t
kafkadump_crc32c(uint32_t value, const unsigned char *p, size_t n)
{
    return ~crc32c_raw(~value, p, n);
}

#endif
