/* kafkadump.accel.pcapread: the compiled twin of the pcap reader's packet loop.
 *
 * The pure-Python reader (kafkadump/sources/pcap.py: CaptureReader._pcap, _packet,
 * packet_from_bytes, link_offset, parse_ip, parse_tcp) is the reference.  This loop reads
 * the packet records of a classic pcap file and takes apart the plain case only: an intact
 * record whose link header (as link_offset reads it) leads to an unfragmented TCP segment
 * over IPv4 whose headers parse_ip and parse_tcp accept.  Every other record (IPv6, not TCP,
 * fragments, headers cut short, a link type it does not know) is handed back by its file
 * position, and the caller's Python code reads it, counts it and words any finding.  The loop
 * stops (and hands the rest back) at a record whose header cannot be trusted (the Python loop
 * then says why), at ``release_at`` (where the reader hands mapped pages back), and after
 * ``limit`` records.
 *
 *   pcap_run(buf, pos, big_endian, nanoseconds, linktype, release_at, limit)
 *       -> (items, pos, stopped)
 *   items: per record, in file order, either its file position (an int: hand back), or
 *          (position, time, addresses, sport, dport, seq, flags, payload, missing, ack) where
 *          addresses is the IPv4 header's bytes 12-19 as one big-endian integer, time is
 *          ts + frac * (1e-9 or 1e-6) as Python computes it, payload the captured TCP payload
 *   pos: where the next record starts; stopped: 1 when the record at pos is not one this loop
 *        judges (bad header, past the end) or pos is at release_at, 0 when the limit was reached
 *        or the buffer ended cleanly (pos == len).
 *
 *   pcap_times(buf, big_endian, nanoseconds) -> (first, last, pos)
 *       twin of CaptureReader.time_span over a classic pcap: the least and greatest time of the
 *       intact records from the first (None, None when there are none), and where they end
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

#define MAX_SNAPLEN (1u << 28)

#define LINK_NULL 0
#define LINK_ETHERNET 1
#define LINK_RAW 101
#define LINK_LOOP 108
#define LINK_SLL 113
#define LINK_IPV4 228
#define LINK_IPV6 229
#define LINK_SLL2 276

static inline uint32_t
rd32(const unsigned char *p, int big)
{
    return big ? ((uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3])
               : ((uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0]);
}

static inline unsigned
be16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* link_offset's twin: where IP starts in a frame of n bytes, or -1 (not IP, or a link type not known) */
/* seconds + fraction * resolution, rounded as Python rounds it: the product, then the sum (a
   compiler may fuse the two into one multiply-add with a single rounding; the volatile stops it) */
static double
packet_time(uint32_t seconds, uint32_t fraction, double resolution)
{
    volatile double part = (double)fraction * resolution;
    return (double)seconds + part;
}

static Py_ssize_t
link_offset(Py_ssize_t linktype, const unsigned char *d, Py_ssize_t n)
{
    switch (linktype) {
    case LINK_ETHERNET: {
        Py_ssize_t p = 12;
        while (p + 2 <= n) {
            unsigned et = be16(d + p);
            if (et == 0x8100 || et == 0x88A8 || et == 0x9100) {
                p += 4;
                continue;
            }
            return (et == 0x0800 || et == 0x86DD) ? p + 2 : -1;
        }
        return -1;
    }
    case LINK_RAW: case 12: case 14: case LINK_IPV4: case LINK_IPV6:
        return 0;
    case LINK_NULL: case LINK_LOOP:
        return n >= 4 ? 4 : -1;
    case LINK_SLL:
        if (n < 16)
            return -1;
        return (be16(d + 14) == 0x0800 || be16(d + 14) == 0x86DD) ? 16 : -1;
    case LINK_SLL2:
        if (n < 20)
            return -1;
        return (be16(d) == 0x0800 || be16(d) == 0x86DD) ? 20 : -1;
    default:
        return -1;
    }
}

/* One record's frame d[0:n]: the plain TCP-over-IPv4 case as a tuple, or NULL with no error set
 * (hand back), or NULL with an error set. */
static PyObject *
plain_packet(const unsigned char *d, Py_ssize_t n, Py_ssize_t linktype, Py_ssize_t position, double when)
{
    Py_ssize_t off = link_offset(linktype, d, n);
    if (off < 0 || off >= n || d[off] >> 4 != 4 || off + 20 > n)
        return NULL;
    const unsigned char *ip = d + off;
    if (ip[9] != 6)
        return NULL;                                     /* not TCP: the reader counts it */
    unsigned frag = be16(ip + 6);
    if ((frag & 0x2000) || (frag & 0x1FFF))
        return NULL;                                     /* a fragment: the datagram reassembly's */
    Py_ssize_t ihl = (Py_ssize_t)(ip[0] & 0x0F) * 4;
    Py_ssize_t total = be16(ip + 2);
    if (total == 0)
        total = n - off;                                 /* TSO/GSO super-packet */
    if (ihl < 20 || off + ihl > n || total < ihl)
        return NULL;
    Py_ssize_t start = off + ihl, end = off + total;
    if (start + 20 > n)
        return NULL;
    const unsigned char *t = d + start;
    unsigned sport = be16(t), dport = be16(t + 2);
    uint32_t seq = rd32(t + 4, 1), ack = rd32(t + 8, 1);
    unsigned off_flags = be16(t + 12);
    Py_ssize_t doff = (Py_ssize_t)(off_flags >> 12) * 4;
    if (doff < 20)
        return NULL;
    Py_ssize_t pstart = start + doff, pend = end < n ? end : n;
    Py_ssize_t covered = pend > pstart ? pend : pstart;
    Py_ssize_t missing = end - covered > 0 ? end - covered : 0;
    if (pstart > pend)
        pstart = pend;
    unsigned long long addresses = 0;
    for (int i = 12; i < 20; i++)
        addresses = addresses << 8 | ip[i];
    return Py_BuildValue("(ndKIIkIy#nk)", position, when, addresses, sport, dport, (unsigned long)seq,
                         off_flags & 0x1FFu, (const char *)d + pstart, pend - pstart, missing, (unsigned long)ack);
}

static PyObject *
pcap_run(PyObject *self, PyObject *args)
{
    PyObject *data;
    Py_ssize_t pos, release_at, limit;
    int big, nanos;
    Py_ssize_t linktype;
    if (!PyArg_ParseTuple(args, "Onppnnn", &data, &pos, &big, &nanos, &linktype, &release_at, &limit))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len;
    double res = nanos ? 1e-9 : 1e-6;
    PyObject *items = PyList_New(0);
    int stopped = 0;
    if (items == NULL)
        goto fail;
    if (pos < 0)
        pos = n;
    for (Py_ssize_t done = 0; pos < n; done++) {
        if (done >= limit)
            break;
        if (pos >= release_at || n - pos < 16) {
            stopped = 1;
            break;
        }
        const unsigned char *h = buf + pos;
        uint32_t ts = rd32(h, big), frac = rd32(h + 4, big), incl = rd32(h + 8, big);
        if (incl > MAX_SNAPLEN || (Py_ssize_t)incl > n - pos - 16) {
            stopped = 1;
            break;
        }
        double when = packet_time(ts, frac, res);
        PyObject *item = plain_packet(h + 16, (Py_ssize_t)incl, linktype, pos, when);
        if (item == NULL) {
            if (PyErr_Occurred())
                goto fail;
            item = PyLong_FromSsize_t(pos);
            if (item == NULL)
                goto fail;
        }
        int appended = PyList_Append(items, item);
        Py_DECREF(item);
        if (appended < 0)
            goto fail;
        pos += 16 + (Py_ssize_t)incl;
    }
    PyBuffer_Release(&view);
    PyObject *out = Py_BuildValue("(Nni)", items, pos, stopped);
    return out;
fail:
    Py_XDECREF(items);
    PyBuffer_Release(&view);
    return NULL;
}

/* pcap_times(buf, big_endian, nanoseconds) -> (first, last, pos): CaptureReader.time_span's loop over
 * a classic pcap's records from the first: the least and the greatest time of the intact records
 * (None, None when there are none) and where the intact records end (the Python loop stops there too). */
static PyObject *
pcap_times(PyObject *self, PyObject *args)
{
    PyObject *data;
    int big, nanos;
    if (!PyArg_ParseTuple(args, "Opp", &data, &big, &nanos))
        return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const unsigned char *buf = (const unsigned char *)view.buf;
    Py_ssize_t n = view.len, pos = 24;
    double res = nanos ? 1e-9 : 1e-6, first = 0, last = 0;
    int seen = 0;
    while (pos < n && n - pos >= 16) {
        const unsigned char *h = buf + pos;
        uint32_t ts = rd32(h, big), frac = rd32(h + 4, big), incl = rd32(h + 8, big);
        if (incl > MAX_SNAPLEN || (Py_ssize_t)incl > n - pos - 16)
            break;
        double when = packet_time(ts, frac, res);
        if (!seen || when < first)
            first = when;
        if (!seen || when > last)
            last = when;
        seen = 1;
        pos += 16 + (Py_ssize_t)incl;
    }
    PyBuffer_Release(&view);
    if (!seen)
        return Py_BuildValue("(OOn)", Py_None, Py_None, pos);
    return Py_BuildValue("(ddn)", first, last, pos);
}

static PyMethodDef methods[] = {
    {"pcap_times", pcap_times, METH_VARARGS,
     "The least and greatest time of a classic pcap's intact packet records, and where they end."},
    {"pcap_run", pcap_run, METH_VARARGS,
     "The packet records of a classic pcap from pos: the plain TCP/IPv4 ones taken apart, the rest handed back."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kafkadump.accel.pcapread",
    "The compiled twin of the pcap reader's packet loop (the pure-Python reader is the reference).", -1, methods,
};

/* raised when a function's arguments or results change (accel/__init__.py's MODULES must match) */
#define PCAPREAD_INTERFACE 1

PyMODINIT_FUNC
PyInit_pcapread(void)
{
    PyObject *m = PyModule_Create(&module);
    /* the functions' signatures, as accel/__init__.py's MODULES expects them: a build older than the Python
     * code (an in-place build not redone) is left unused rather than called with arguments it does not take */
    if (m != NULL && PyModule_AddIntConstant(m, "INTERFACE", PCAPREAD_INTERFACE) < 0)
        Py_CLEAR(m);
    return m;
}
