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

struct hrdma_ctx {
    ucp_context_h    ucp_ctx;
    atomic_uint_fast64_t bytes_registered;
    atomic_uint_fast64_t regions;
    atomic_uint_fast64_t endpoints;
    atomic_uint_fast64_t workers;
};

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

#endif /* HRDMA_INT_H */
