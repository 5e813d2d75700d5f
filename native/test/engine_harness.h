/* Shared callbacks and helpers for the engine tests. */
#ifndef HRDMA_ENGINE_HARNESS_H
#define HRDMA_ENGINE_HARNESS_H

#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <string.h>
#include <time.h>

#define MAX_OPS   4096
#define MAX_EPS   64

typedef struct {
    int      done;
    int      status;
    size_t   length;
    uint64_t ep_token;
} op_rec_t;

typedef struct side {
    const char       *name;
    hrdma_worker_t   *worker;
    /* connection requests */
    int               reject;
    uint64_t          next_token;
    hrdma_ep_t       *accepted[MAX_EPS];
    uint64_t          accepted_token[MAX_EPS];
    int               n_accepted;
    char              last_peer[64];
    /* active messages */
    int               drop_am;
    void             *am_dst;          /* used when am_dst_per_ep is NULL */
    hrdma_mem_t      *am_dst_mem;
    size_t            am_dst_stride;   /* dst = am_dst + index * stride */
    int               am_count;
    uint64_t          am_last_token;
    uint16_t          am_last_id;
    size_t            am_last_len;
    uint64_t          am_tokens[MAX_EPS * 4];
    int               on_am_returned;  /* on_am currently finished */
    int32_t           am_last_page_offset; /* placement hint of the last AM */
    int               recv_done;
    int               recv_done_before_am; /* contract violation counter */
    int               recv_last_status;
    size_t            recv_bytes;
    /* errors */
    int               ep_errors;
    uint64_t          ep_error_token;
    int               ep_error_status;
    int               ep_error_count_by_token[MAX_EPS * 4];
} side_t;

static op_rec_t ops[MAX_OPS];

static void h_on_conn(void *arg, uint64_t listener_token,
                      hrdma_conn_request_t req, const char *peer)
{
    side_t *s = arg;

    snprintf(s->last_peer, sizeof(s->last_peer), "%s", peer);
    if (s->reject) {
        CHECK_EQ(hrdma_conn_reject(s->worker, listener_token, req), HRDMA_OK);
        return;
    }
    CHECK(s->n_accepted < MAX_EPS);
    s->accepted_token[s->n_accepted] = s->next_token;
    CHECK_EQ(hrdma_conn_accept(s->worker, req, s->next_token++,
                               &s->accepted[s->n_accepted]), HRDMA_OK);
    s->n_accepted++;
}

static int h_on_am(void *arg, uint64_t ep_token, uint16_t am_id, size_t length,
                   int32_t page_offset, void **dst_p, hrdma_mem_t **dst_mem_p,
                   uint64_t *cookie_p)
{
    side_t *s = arg;
    int idx   = s->am_count;

    s->am_last_page_offset = page_offset;
    s->am_last_token = ep_token;
    s->am_last_id    = am_id;
    s->am_last_len   = length;
    if (idx < MAX_EPS * 4) {
        s->am_tokens[idx] = ep_token;
    }
    s->am_count++;
    if (s->drop_am) {
        return HRDMA_ERR_CANCELED;
    }
    *dst_p         = (char *)s->am_dst + (size_t)idx * s->am_dst_stride;
    *dst_mem_p     = s->am_dst_mem;
    *cookie_p      = 7000 + (uint64_t)idx;
    s->on_am_returned = idx + 1;
    return HRDMA_OK;
}

static void h_on_recv_done(void *arg, uint64_t ep_token, uint64_t cookie,
                           int status, size_t length)
{
    side_t *s = arg;

    (void)ep_token;
    if (s->on_am_returned < (int)(cookie - 7000 + 1)) {
        s->recv_done_before_am++;
    }
    s->recv_done++;
    s->recv_last_status = status;
    s->recv_bytes      += length;
}

static void h_on_op_done(void *arg, uint64_t ep_token, uint64_t cookie,
                         int status, size_t length)
{
    (void)arg;
    CHECK(cookie < MAX_OPS);
    CHECK(!ops[cookie].done);
    ops[cookie].done     = 1;
    ops[cookie].status   = status;
    ops[cookie].length   = length;
    ops[cookie].ep_token = ep_token;
}

static void h_on_ep_error(void *arg, uint64_t ep_token, int status)
{
    side_t *s = arg;

    s->ep_errors++;
    s->ep_error_token  = ep_token;
    s->ep_error_status = status;
    if (ep_token < MAX_EPS * 4) {
        s->ep_error_count_by_token[ep_token]++;
    }
}

static void side_init(side_t *s, const char *name, hrdma_ctx_t *ctx,
                      uint64_t first_token)
{
    hrdma_worker_callbacks_t cb = {
        .arg             = s,
        .on_conn_request = h_on_conn,
        .on_am           = h_on_am,
        .on_recv_done    = h_on_recv_done,
        .on_op_done      = h_on_op_done,
        .on_ep_error     = h_on_ep_error,
    };

    memset(s, 0, sizeof(*s));
    s->name       = name;
    s->next_token = first_token;
    CHECK_EQ(hrdma_worker_create(ctx, &cb, &s->worker), HRDMA_OK);
}

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void progress2(side_t *a, side_t *b)
{
    if (a != NULL) {
        hrdma_worker_progress(a->worker);
    }
    if (b != NULL) {
        hrdma_worker_progress(b->worker);
    }
}

/* Progresses both sides until cond holds; fails the test after timeout_s. */
#define WAIT_UNTIL(a, b, cond, timeout_s) \
    do { \
        double _end = now_s() + (timeout_s); \
        while (!(cond)) { \
            if (now_s() > _end) { \
                fprintf(stderr, "%s:%d: timed out waiting for %s\n", \
                        __FILE__, __LINE__, #cond); \
                exit(1); \
            } \
            progress2((a), (b)); \
        } \
    } while (0)

/* A forked server's start: a context and worker, a listener on a free port
 * of 127.0.0.1 whose port goes to stdout (the parent reads it), then
 * progress until the client's first active message has arrived in small. */
static inline hrdma_listener_t *serve_first_message(side_t *s, const char *config,
                                                    hrdma_ctx_t **ctx_p, char *small)
{
    hrdma_listener_t *listener;

    CHECK_EQ(hrdma_ctx_create(config, ctx_p), HRDMA_OK);
    side_init(s, "server", *ctx_p, 1000);
    s->am_dst = small;
    CHECK_EQ(hrdma_listener_create(s->worker, "127.0.0.1", 0, 1, &listener),
             HRDMA_OK);
    printf("%d\n", hrdma_listener_port(listener));
    fflush(stdout);
    WAIT_UNTIL(s, NULL, s->recv_done == 1, 30);
    return listener;
}

/* Treats HRDMA_OK (done at once) like a completed op record. */
static void op_post(uint64_t cookie, int status, size_t len)
{
    CHECK(cookie < MAX_OPS);
    memset(&ops[cookie], 0, sizeof(ops[cookie]));
    if (status == HRDMA_OK) {
        ops[cookie].done   = 1;
        ops[cookie].status = HRDMA_OK;
        ops[cookie].length = len;
    } else if (status != HRDMA_INPROGRESS) {
        ops[cookie].done   = 1;
        ops[cookie].status = status;
    }
}

#endif
