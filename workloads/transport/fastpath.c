/* The transport engine's compiled routines (workloads/transport/fastpath.py), built by cffi at
 * install time (fastpath_build.py): rx_take on the receive side, tx_stage on the send side.
 *
 * Receive: one call takes a whole recvmmsg batch: for each datagram that is a well-formed DATA packet of
 * the active round, from the member its header names, new and in range, it does what
 * wire.decoder + Engine._dispatch + RoundState.accept would do (mark it received, add the
 * scatter payload into the partial sum or copy the gathered payload into the output) and
 * counts it; a duplicate of such a packet it counts and drops. Every other datagram (NACKs,
 * other rounds, values screen.py rejects, anything malformed) is handed back by index to the Python path, which stays the
 * specification: it decodes the
 * datagram again and counts why it was rejected. So this file can only ever accept less than
 * the Python path would, never more; tests/unit/test_fastpath.py checks the two agree.
 *
 * Header (wire.HEADER "<IBBBBQIHHIIII", little-endian, 40 bytes): magic u32, version u8, kind u8,
 * stage u8, flags u8, job token u64, round u32, src u16, shard u16, offset u32, count u32,
 * eps_id u32, timeout_us u32, at the offsets fastpath.h declares (checked against wire.py).
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "fastpath.h"

#define HDR ((uint32_t)WIRE_HEADER_BYTES)
#define MAGIC ((uint32_t)WIRE_MAGIC)
#define VERSION ((uint32_t)WIRE_VERSION)
#define DATA ((uint32_t)WIRE_DATA)
#define DATA_FLAGS ((uint32_t)WIRE_DATA_FLAGS)
#define FLAG_LAST ((uint32_t)WIRE_FLAG_LAST)

static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint16_t u16(const uint8_t *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }

int rx_take(rx_round *r, const uint8_t *bufs, size_t slot_bytes, const uint8_t *msgs,
            size_t msg_stride, size_t len_off, const uint8_t *names, size_t name_stride,
            int n, int32_t *slow)
{
    int nslow = 0;
    for (int k = 0; k < n; k++) {
        uint32_t len = u32(msgs + (size_t)k * msg_stride + len_off);
        if (len == 0)
            continue; /* an empty datagram carries nothing; the Python path skips it too */
        const uint8_t *b = bufs + (size_t)k * slot_bytes;
        if (len < HDR || len > r->max_bytes)
            goto python;
        uint32_t stage = b[WIRE_OFF_STAGE], flags = b[WIRE_OFF_FLAGS];
        uint32_t src = u16(b + WIRE_OFF_SRC), shard = u16(b + WIRE_OFF_SHARD);
        uint32_t offset = u32(b + WIRE_OFF_OFFSET), count = u32(b + WIRE_OFF_COUNT);
        if (u32(b + WIRE_OFF_MAGIC) != MAGIC || b[WIRE_OFF_VERSION] != VERSION
            || b[WIRE_OFF_KIND] != DATA || stage > 1)
            goto python;
        if (u64(b + WIRE_OFF_JOB_TOKEN) != r->job_token || src >= r->world || src == r->me || shard >= r->world)
            goto python;
        if ((flags & ~DATA_FLAGS) || shard != (stage == 0 ? r->me : src))
            goto python;
        if (count == 0 || count > r->per_pkt || len != HDR + 4u * count || offset % r->per_pkt)
            goto python;
        if (u64(names + (size_t)k * name_stride) != r->expect[src] || u32(b + WIRE_OFF_ROUND) != r->round)
            goto python;
        if (!(stage == 0 ? r->scatter_open : r->gather_open))
            goto python;
        uint8_t *got = stage == 0 ? r->sc_got[src] : r->ga_got[src];
        uint32_t i = offset / r->per_pkt;
        int64_t left = (int64_t)r->length[shard] - (int64_t)offset;
        int64_t want = (int64_t)r->per_pkt < left ? (int64_t)r->per_pkt : left;
        if (got == NULL || i >= r->npkts[shard] || (int64_t)count != want)
            goto python;
        if (got[i]) { /* a duplicate (a repair that crossed, or a replay): counted, as accept does */
            r->dups += 1;
            r->rx_bytes[src] += len;
            if (u32(b + WIRE_OFF_EPS_ID) != r->eps_id)
                r->eps_mismatch += 1;
            continue;
        }
        const uint8_t *payload = b + HDR;
        float bound = stage == 0 ? r->sc_bound : r->ga_bound;
        for (uint32_t j = 0; j < count; j++) {
            float v;
            memcpy(&v, payload + 4u * j, 4); /* the payload need not be 4-aligned */
            if (!(v < bound && v > -bound))
                goto python; /* non-finite or too large: the Python path drops and counts it */
        }
        got[i] = 1;
        r->rx_bytes[src] += len;
        if (stage == 0) {
            float *acc = r->partial + offset;
            for (uint32_t j = 0; j < count; j++) {
                float v;
                memcpy(&v, payload + 4u * j, 4); /* the payload need not be 4-aligned */
                acc[j] += v;
            }
            r->sc_count[i] += 1;
            r->sc_elems += count;
            if ((flags & FLAG_LAST) && !r->sc_last[src]) {
                r->sc_last[src] = 1;
                r->news += 1;
            }
        } else {
            memcpy(r->out + r->start[shard] + offset, payload, 4u * count);
            r->ga_elems += count;
            if ((flags & FLAG_LAST) && !r->ga_last[src]) {
                r->ga_last[src] = 1;
                r->news += 1;
            }
        }
        uint8_t *seen = stage == 0 ? r->sc_seen : r->ga_seen;
        if (!seen[src]) {
            seen[src] = 1;
            r->news += 1;
        }
        r->pkts += 1;
        if (u32(b + WIRE_OFF_EPS_ID) != r->eps_id)
            r->eps_mismatch += 1;
        uint32_t budget = u32(b + WIRE_OFF_TIMEOUT_US);
        if (budget && budget != r->budget_us[src]) {
            r->budget_us[src] = budget;
            r->news += 1;
        }
        continue;
    python:
        slow[nslow++] = k;
    }
    return nslow;
}

/* Stage packets first .. first+m-1 of one shard's first transmission into slots k0 .. k0+m-1 of
 * a send batch (mmsg.SendBatch: slot k's iovec 2k is its 40-byte header slot, 2k+1 the payload),
 * as m calls of Engine._stage_data would: the header is `tmpl` with its flags (FLAG_LAST on packet
 * `last_idx`), offset and count set, the payload iovec points into the shard, the destination is
 * `name`. Returns the payload bytes staged. Repairs, which also update Python-side bookkeeping,
 * stay with _stage_data.
 * No bounds checks: the caller (fastpath.TxFast.stage, which asserts it) guarantees
 * 1 <= m, k0 + m <= the batch's slots, and first + m - 1 <= last_idx (every packet inside the
 * shard, so off < shard_len and the payload pointer stays in it). */
uint64_t tx_stage(void *msgs_v, void *iov_v, uint8_t *hdrs, int k0, int m, void *name,
                  const uint8_t *payload, uint32_t first, uint32_t per_pkt, uint32_t shard_len,
                  const uint8_t *tmpl, uint32_t last_idx)
{
    struct mmsghdr *msgs = msgs_v;
    struct iovec *iov = iov_v;
    uint64_t total = 0;
    for (int j = 0; j < m; j++) {
        uint32_t idx = first + (uint32_t)j, off = idx * per_pkt;
        uint32_t cnt = shard_len - off < per_pkt ? shard_len - off : per_pkt;
        uint8_t *h = hdrs + (size_t)(k0 + j) * HDR;
        memcpy(h, tmpl, HDR);
        uint8_t last = idx == last_idx ? FLAG_LAST : 0u;
        h[WIRE_OFF_FLAGS] = (uint8_t)(tmpl[WIRE_OFF_FLAGS] | last);
        memcpy(h + WIRE_OFF_OFFSET, &off, 4);
        memcpy(h + WIRE_OFF_COUNT, &cnt, 4);
        msgs[k0 + j].msg_hdr.msg_name = name;
        iov[2 * (k0 + j) + 1].iov_base = (void *)(payload + 4u * off);
        iov[2 * (k0 + j) + 1].iov_len = 4u * cnt;
        total += 4u * cnt;
    }
    return total;
}
