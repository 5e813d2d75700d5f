/*
 * Internal declarations shared by the areas of libhrdma. Not installed.
 */
#ifndef HRDMA_INT_H
#define HRDMA_INT_H

#include <hrdma/hrdma.h>

#include <stdatomic.h>
#include <ucp/api/ucp.h>

#define HRDMA_UNUSED __attribute__((unused))

/* Logs one line to stderr, prefixed "hrdma: ". */
void hrdma_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Maps a UCX status to an hrdma status. */
int hrdma_status_from_ucs(ucs_status_t status);

/* Resource counters: one set per context, one for the whole process. */
typedef struct {
    atomic_uint_fast64_t bytes_registered;
    atomic_uint_fast64_t regions;
    atomic_uint_fast64_t endpoints;
    atomic_uint_fast64_t workers;
} hrdma_counters_t;

struct hrdma_ctx {
    ucp_context_h    ucp_ctx;
    hrdma_counters_t count;
};

/* The process's totals over every context (hrdma_process_stats). */
extern hrdma_counters_t hrdma_process_count;

/* Adds delta (may be negative) to a counter of ctx and of the process. */
#define HRDMA_COUNT(ctx, field, delta) \
    do { \
        atomic_fetch_add(&(ctx)->count.field, (uint_fast64_t)(delta)); \
        atomic_fetch_add(&hrdma_process_count.field, (uint_fast64_t)(delta)); \
    } while (0)

struct hrdma_mem {
    hrdma_ctx_t *ctx;
    void        *address;
    size_t       length;
    ucp_mem_h    memh;
};

/* The UCX memory handle of a region, or NULL for no region. */
static inline ucp_mem_h hrdma_mem_ucp_memh(const hrdma_mem_t *mem)
{
    return (mem == NULL) ? NULL : mem->memh;
}

/* The page offset an active message's user header asks the receiver to align
 * (engine.c), or -1: no header, another version, or out of range. Here, not
 * static, so that the tests can feed it what a hostile peer could send. */
int32_t hrdma_place_hdr_parse(const void *header, size_t header_length);

#endif /* HRDMA_INT_H */
