/*
 * Engine internals: worker, listener, endpoint and request layouts.
 */
#ifndef HRDMA_ENGINE_INT_H
#define HRDMA_ENGINE_INT_H

#include "hrdma_int.h"

#include <ucs/datastruct/khash.h>

#define HRDMA_AM_IDS 16

/* Per-request data UCX reserves in front of every request (request_size).
 * Filled in after the posting call returns: callbacks only run inside
 * ucp_worker_progress on the same thread. */
typedef struct {
    hrdma_worker_t *worker;
    hrdma_ep_t     *ep;       /* close requests only, NULL once orphaned */
    uint64_t        ep_token;
    uint64_t        cookie;
    size_t          length;
    int             silent;   /* complete without a callback */
} hrdma_req_t;

KHASH_MAP_INIT_INT64(hrdma_ep_map, hrdma_ep_t *)

typedef struct {
    hrdma_worker_t *worker;
    uint16_t        am_id;
} hrdma_am_arg_t;

struct hrdma_worker {
    hrdma_ctx_t              *ctx;
    ucp_worker_h              ucp_worker;
    hrdma_worker_callbacks_t  cb;
    int                       efd;
    khash_t(hrdma_ep_map)    *ep_map;   /* ucp_ep_h -> hrdma_ep_t */
    uint64_t                  num_eps;
    uint64_t                  num_listeners;
    uint64_t                  num_rkeys;
    hrdma_am_arg_t            am_args[HRDMA_AM_IDS];
};

struct hrdma_listener {
    hrdma_worker_t *worker;
    ucp_listener_h  ucp_listener;
    uint64_t        token;
    int             port;
};

struct hrdma_ep {
    hrdma_worker_t *worker;
    ucp_ep_h        ucp_ep;
    uint64_t        token;
    int             failed;     /* on_ep_error reported */
    int             closing;    /* hrdma_ep_close called */
    int             in_map;
    hrdma_req_t    *close_req;  /* close in flight */
};

struct hrdma_rkey {
    hrdma_worker_t *worker;
    ucp_rkey_h      ucp_rkey;
};

#endif /* HRDMA_ENGINE_INT_H */
