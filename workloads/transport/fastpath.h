/* The compiled data path's contract (fastpath.c: rx_take receives, tx_stage sends).
 * fastpath_build.py hands this same text to cffi's cdef, so the C compiler and the Python binding
 * read one declaration. */

/* The wire header as fastpath.c reads and writes it (wire.HEADER, little-endian): its size, each
 * field's byte offset (WIRE_OFF_ + wire.Header's field name) and the constants it tests.
 * fastpath.py checks every one against wire.py when it is imported. */
enum {
    WIRE_HEADER_BYTES = 40,
    WIRE_OFF_MAGIC = 0, WIRE_OFF_VERSION = 4, WIRE_OFF_KIND = 5, WIRE_OFF_STAGE = 6,
    WIRE_OFF_FLAGS = 7, WIRE_OFF_JOB_TOKEN = 8, WIRE_OFF_ROUND = 16, WIRE_OFF_SRC = 20,
    WIRE_OFF_SHARD = 22, WIRE_OFF_OFFSET = 24, WIRE_OFF_COUNT = 28, WIRE_OFF_EPS_ID = 32,
    WIRE_OFF_TIMEOUT_US = 36,
    WIRE_MAGIC = 0x504C4244, WIRE_VERSION = 2, WIRE_DATA = 1,
    WIRE_FLAG_LAST = 0x01, WIRE_DATA_FLAGS = 0x03
};

typedef struct {
    /* the rank and its round: set by fastpath.RxFast.bind */
    uint64_t job_token;
    uint32_t world, me, per_pkt, max_bytes;
    uint32_t round, eps_id;
    int32_t scatter_open, gather_open;
    /* screen.py: a value is taken only if -bound < v < bound (NaN fails), per stage */
    float sc_bound, ga_bound;
    /* bytes of the datagrams taken, per sender, for the whole round (RoundState.rx_bytes) */
    uint64_t *rx_bytes;
    float *partial;
    int32_t *sc_count;
    float *out;
    uint8_t **sc_got;
    uint8_t **ga_got;
    uint32_t *start, *length, *npkts;
    uint64_t *expect;
    /* what the accepted datagrams did, summed until the caller reads and clears them */
    uint64_t sc_elems, ga_elems;
    uint32_t pkts, eps_mismatch, dups;
    /* per sender, for the whole round: its latest budget and whether its LAST packet came in
     * each stage, and whether any of its DATA was taken in each stage (the sender has moved
     * on: RoundState.moved_on); `news` counts changes to any since the caller last cleared it */
    uint32_t *budget_us;
    uint8_t *sc_last, *ga_last, *sc_seen, *ga_seen;
    uint32_t news;
} rx_round;

int rx_take(rx_round *r, const uint8_t *bufs, size_t slot_bytes, const uint8_t *msgs,
            size_t msg_stride, size_t len_off, const uint8_t *names, size_t name_stride,
            int n, int32_t *slow);

uint64_t tx_stage(void *msgs, void *iov, uint8_t *hdrs, int k0, int m, void *name,
                  const uint8_t *payload, uint32_t first, uint32_t per_pkt, uint32_t shard_len,
                  const uint8_t *tmpl, uint32_t last_idx);
