/*
 * Engine internals: worker, listener, endpoint and request layouts.
 */
#ifndef HRDMA_ENGINE_INT_H
#define HRDMA_ENGINE_INT_H

#include "hrdma_int.h"

#include <ucs/datastruct/khash.h>
#include <ucs/datastruct/list.h>

#define HRDMA_AM_IDS 16

/* A graceful close gives up after this long unless the owner says
 * otherwise (hrdma_worker_set_close_timeout). */
#define HRDMA_CLOSE_TIMEOUT_MS_DEFAULT 5000
/* hrdma_worker_destroy progresses at most this long (or the close
 * timeout, if shorter) for requests still outstanding. */
#define HRDMA_DESTROY_DRAIN_MS 2000

typedef enum {
    HRDMA_REQ_OP,          /* send, put, get, flush: on_op_done */
    HRDMA_REQ_STREAM_RECV, /* on_op_done; completes when the ep goes away */
    HRDMA_REQ_RECV,        /* rendezvous receive: on_recv_done */
    HRDMA_REQ_CLOSE        /* ucp_ep_close_nbx */
} hrdma_req_kind_t;

/* Per-request data UCX reserves in front of every request (request_size).
 * Filled in after the posting call returns: callbacks only run inside
 * ucp_worker_progress on the same thread. Every request UCX hands back is
 * on its worker's list until its callback runs, so that nothing is left
 * outstanding when the worker is destroyed. */
typedef struct {
    ucs_list_link_t  list;     /* hrdma_worker::reqs */
    hrdma_worker_t  *worker;
    hrdma_ep_t      *ep;       /* NULL once the endpoint is destroyed */
    uint64_t         ep_token;
    uint64_t         cookie;
    size_t           length;
    uint8_t          kind;     /* hrdma_req_kind_t */
    uint8_t          silent;   /* complete without a callback */
} hrdma_req_t;

/* Where an endpoint's close stands. A graceful close first waits until
 * the endpoint's own requests are done (DRAINING): until then it can
 * still be turned into a forced one. Only then does UCX get the close
 * (CLOSING), which can no longer be forced but has no requests of ours
 * left on the endpoint. */
typedef enum {
    HRDMA_CLOSE_NONE,
    HRDMA_CLOSE_DRAINING,
    HRDMA_CLOSE_CLOSING,
    HRDMA_CLOSE_DONE
} hrdma_close_state_t;

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
    ucs_list_link_t           reqs;     /* outstanding hrdma_req_t */
    ucs_list_link_t           closing;  /* endpoints DRAINING or CLOSING */
    int                       close_timeout_ms;
    /* Inside ucp_am_recv_data_nbx: a rendezvous receive that completes there
     * (its sender's endpoint is gone) has its callback run before the call
     * returns, on a request not tracked yet; the callback leaves the result
     * here instead. */
    int                       recv_posting;
    int                       recv_posted_done;
    ucs_status_t              recv_posted_status;
    size_t                    recv_posted_length;
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
    hrdma_req_t    *close_req;  /* UCX close in flight (CLOSING) */
    uint64_t        n_wait;     /* requests a graceful close waits for */
    int             close_state;  /* hrdma_close_state_t */
    uint64_t        close_cookie;
    uint64_t        close_deadline_ms;
    ucs_list_link_t close_link;   /* hrdma_worker::closing */
    int             on_closing;   /* close_link is on that list */
};

struct hrdma_rkey {
    hrdma_worker_t *worker;
    ucp_rkey_h      ucp_rkey;
};

#endif /* HRDMA_ENGINE_INT_H */
