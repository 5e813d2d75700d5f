/*
 * Worker, listener, endpoints and operations over UCP.
 *
 * Every endpoint is created in error mode PEER; UCX reports a failed
 * endpoint through hrdma_ep_err_cb and fails its outstanding requests, which
 * then reach on_op_done with an error. Active messages are always sent with
 * UCP_AM_SEND_FLAG_REPLY so the receiver learns the ucp_ep_h they came on;
 * the worker maps that back to our endpoint (and its token) with a hash.
 *
 * UCX asserts when an endpoint is destroyed while requests are still queued
 * on it (ucp_ep_destroy_base checks that its list of requests waiting for a
 * reply, e.g. rendezvous sends and receives, is empty), and
 * ucp_worker_destroy destroys every endpoint UCX still holds. So: every
 * request UCX hands back is tracked on its worker; a graceful close hands
 * the endpoint to UCX only once the endpoint's own requests are done (and
 * turns into a forced close, which cancels them, if the owner gives up or
 * the close timeout passes); and hrdma_worker_destroy progresses until
 * every tracked request has completed, or a bounded time has passed, before
 * it calls ucp_worker_destroy.
 */
#include "engine_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define HRDMA_PROGRESS_ROUNDS 64

static uint64_t hrdma_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* ------------------------------------------------------------ helpers -- */

static hrdma_ep_t *hrdma_worker_ep_find(hrdma_worker_t *worker, ucp_ep_h uep)
{
    khiter_t it = kh_get(hrdma_ep_map, worker->ep_map, (uint64_t)(uintptr_t)uep);

    return (it == kh_end(worker->ep_map)) ? NULL : kh_val(worker->ep_map, it);
}

static int hrdma_worker_ep_add(hrdma_worker_t *worker, hrdma_ep_t *ep)
{
    khiter_t it;
    int ret;

    it = kh_put(hrdma_ep_map, worker->ep_map, (uint64_t)(uintptr_t)ep->ucp_ep,
                &ret);
    if (ret < 0) {
        return HRDMA_ERR_NOMEM;
    }
    kh_val(worker->ep_map, it) = ep;
    ep->in_map = 1;
    return HRDMA_OK;
}

static void hrdma_worker_ep_remove(hrdma_ep_t *ep)
{
    khiter_t it;

    if (!ep->in_map) {
        return;
    }
    it = kh_get(hrdma_ep_map, ep->worker->ep_map,
                (uint64_t)(uintptr_t)ep->ucp_ep);
    if ((it != kh_end(ep->worker->ep_map)) &&
        (kh_val(ep->worker->ep_map, it) == ep)) {
        kh_del(hrdma_ep_map, ep->worker->ep_map, it);
    }
    ep->in_map = 0;
}

static int hrdma_sockaddr_parse(const char *ip, int port,
                                struct sockaddr_storage *ss, socklen_t *len_p)
{
    struct addrinfo hints, *res;
    char port_str[16];

    if ((ip == NULL) || (port < 0) || (port > 65535)) {
        return HRDMA_ERR_INVALID;
    }
    memset(&hints, 0, sizeof(hints));
    hints.ai_flags    = AI_NUMERICHOST | AI_NUMERICSERV;
    hints.ai_family   = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    snprintf(port_str, sizeof(port_str), "%d", port);
    if (getaddrinfo(ip, port_str, &hints, &res) != 0) {
        return HRDMA_ERR_INVALID;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *len_p = res->ai_addrlen;
    freeaddrinfo(res);
    return HRDMA_OK;
}

static int hrdma_sockaddr_port(const struct sockaddr_storage *ss)
{
    if (ss->ss_family == AF_INET) {
        return ntohs(((const struct sockaddr_in *)ss)->sin_port);
    } else if (ss->ss_family == AF_INET6) {
        return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
    }
    return -1;
}

static void hrdma_sockaddr_str(const struct sockaddr_storage *ss, char *buf,
                               size_t len)
{
    char ip[INET6_ADDRSTRLEN] = "?";

    if (ss->ss_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr, ip,
                  sizeof(ip));
        snprintf(buf, len, "%s:%d", ip, hrdma_sockaddr_port(ss));
    } else if (ss->ss_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)ss)->sin6_addr, ip,
                  sizeof(ip));
        snprintf(buf, len, "[%s]:%d", ip, hrdma_sockaddr_port(ss));
    } else {
        snprintf(buf, len, "?");
    }
}

/* ------------------------------------------------- completion callbacks -- */

static int hrdma_req_kind_waited(int kind)
{
    /* A stream receive may wait for data forever; UCX completes it with
     * UCS_ERR_CANCELED when the endpoint goes away. */
    return (kind == HRDMA_REQ_OP) || (kind == HRDMA_REQ_RECV);
}

/* Puts a request UCX handed back on its worker's list. */
static void hrdma_req_track(hrdma_worker_t *worker, hrdma_ep_t *ep,
                            hrdma_req_t *req, int kind, uint64_t ep_token,
                            uint64_t cookie, size_t length)
{
    req->worker   = worker;
    req->ep       = ep;
    req->ep_token = ep_token;
    req->cookie   = cookie;
    req->length   = length;
    req->kind     = (uint8_t)kind;
    req->silent   = 0;
    ucs_list_add_tail(&worker->reqs, &req->list);
    if ((ep != NULL) && hrdma_req_kind_waited(kind)) {
        ep->n_wait++;
    }
}

static void hrdma_req_untrack(hrdma_req_t *req)
{
    ucs_list_del(&req->list);
    if ((req->ep != NULL) && hrdma_req_kind_waited(req->kind)) {
        req->ep->n_wait--;
    }
}

/* The owner's callback for a request that has finished. */
static void hrdma_req_report(const hrdma_req_t *req, int status, size_t length)
{
    hrdma_worker_t *worker = req->worker;

    if (req->silent) {
        return;
    }
    if (req->kind == HRDMA_REQ_RECV) {
        worker->cb.on_recv_done(worker->cb.arg, req->ep_token, req->cookie,
                                status, length);
    } else {
        worker->cb.on_op_done(worker->cb.arg, req->ep_token, req->cookie,
                              status, length);
    }
}

static void hrdma_req_complete(void *request, ucs_status_t ucs, size_t length,
                               int use_length)
{
    hrdma_req_t req = *(hrdma_req_t *)request;

    hrdma_req_untrack(request);
    ucp_request_free(request);
    hrdma_req_report(&req, hrdma_status_from_ucs(ucs),
                     use_length ? length : req.length);
}

static void hrdma_send_cb(void *request, ucs_status_t ucs,
                          void *user_data HRDMA_UNUSED)
{
    hrdma_req_complete(request, ucs, 0, 0);
}

static void hrdma_stream_recv_cb(void *request, ucs_status_t ucs, size_t length,
                                 void *user_data HRDMA_UNUSED)
{
    hrdma_req_complete(request, ucs, length, 1);
}

static void hrdma_am_recv_data_cb(void *request, ucs_status_t ucs,
                                  size_t length, void *user_data)
{
    hrdma_worker_t *worker = user_data;

    if (worker->recv_posting) {
        /* Completed inside ucp_am_recv_data_nbx, which still returns the
         * request: it was never tracked. Freed here (UCX puts it back once
         * this callback returns); the poster reports it. */
        worker->recv_posted_done   = 1;
        worker->recv_posted_status = ucs;
        worker->recv_posted_length = length;
        ucp_request_free(request);
        return;
    }
    hrdma_req_complete(request, ucs, length, 1);
}

static void hrdma_ep_close_finish(hrdma_ep_t *ep, int status);

static void hrdma_close_cb(void *request, ucs_status_t ucs,
                           void *user_data HRDMA_UNUSED)
{
    hrdma_req_t *req = request;
    hrdma_ep_t *ep   = req->ep;

    hrdma_req_untrack(req);
    ucp_request_free(req);
    if (ep != NULL) {
        /* A close of a failed endpoint is still a successful close. */
        ep->close_req = NULL;
        hrdma_ep_close_finish(ep, (ucs == UCS_ERR_CANCELED) ?
                                  HRDMA_ERR_CANCELED : HRDMA_OK);
    }
    /* else orphaned: the owner destroyed the endpoint or gave up on the
     * close; nobody waits for it any more. */
}

/* Turns the result of a posting call into our status; a request gets the
 * data its completion callback reports. */
static int hrdma_req_result_kind(hrdma_ep_t *ep, ucs_status_ptr_t sp, int kind,
                                 uint64_t cookie, size_t length)
{
    if (sp == NULL) {
        return HRDMA_OK;
    }
    if (UCS_PTR_IS_ERR(sp)) {
        return hrdma_status_from_ucs(UCS_PTR_STATUS(sp));
    }
    hrdma_req_track(ep->worker, ep, sp, kind, ep->token, cookie, length);
    return HRDMA_INPROGRESS;
}

static int hrdma_req_result(hrdma_ep_t *ep, ucs_status_ptr_t sp,
                            uint64_t cookie, size_t length)
{
    return hrdma_req_result_kind(ep, sp, HRDMA_REQ_OP, cookie, length);
}

static void hrdma_req_param_init(ucp_request_param_t *param, hrdma_mem_t *mem)
{
    memset(param, 0, sizeof(*param));
    param->op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK;
    param->cb.send      = hrdma_send_cb;
    if (mem != NULL) {
        param->op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        param->memh          = mem->memh;
    }
}

/* ------------------------------------------------------ error handler -- */

static void hrdma_ep_err_cb(void *arg, ucp_ep_h uep, ucs_status_t ucs)
{
    hrdma_worker_t *worker = arg;
    hrdma_ep_t *ep         = hrdma_worker_ep_find(worker, uep);

    if ((ep == NULL) || ep->failed) {
        return;
    }
    ep->failed = 1; /* a close in progress then forces */
    if (ep->closing) {
        return;
    }
    worker->cb.on_ep_error(worker->cb.arg, ep->token,
                           hrdma_status_from_ucs(ucs));
}

/* --------------------------------------------------- active messages -- */

/* The AM user header of a placed message: version 1, then the page offset of
 * the byte to align (u16, little-endian: both ends are x86/arm64 Linux, but
 * spelled out so the wire does not depend on it). */
#define HRDMA_PLACE_HDR_VERSION 1
#define HRDMA_PLACE_HDR_LEN     4

/* UCX 1.13 reads the user header until the send completes (it cannot copy it
 * before 1.15): every header there can be is in this constant table, so a
 * send points at its entry and nothing is allocated or freed per message. */
static uint8_t hrdma_place_hdrs[HRDMA_PLACE_PAGE][HRDMA_PLACE_HDR_LEN];

static pthread_once_t hrdma_place_hdrs_once = PTHREAD_ONCE_INIT;

static void hrdma_place_hdrs_fill(void)
{
    size_t i;

    for (i = 0; i < HRDMA_PLACE_PAGE; i++) {
        hrdma_place_hdrs[i][0] = HRDMA_PLACE_HDR_VERSION;
        hrdma_place_hdrs[i][1] = 0;
        hrdma_place_hdrs[i][2] = (uint8_t)(i & 0xff);
        hrdma_place_hdrs[i][3] = (uint8_t)(i >> 8);
    }
}

/* The page offset a peer's header asks for, or -1: none, another version, or
 * out of range (whatever a peer sends, the receiver pads by less than a page). */
int32_t hrdma_place_hdr_parse(const void *header, size_t header_length)
{
    const uint8_t *h = header;
    uint32_t off;

    if ((header == NULL) || (header_length < HRDMA_PLACE_HDR_LEN) ||
        (h[0] != HRDMA_PLACE_HDR_VERSION)) {
        return -1;
    }
    off = (uint32_t)h[2] | ((uint32_t)h[3] << 8);
    return (off < HRDMA_PLACE_PAGE) ? (int32_t)off : -1;
}

static ucs_status_t hrdma_am_recv_cb(void *arg, const void *header,
                                     size_t header_length,
                                     void *data, size_t length,
                                     const ucp_am_recv_param_t *param)
{
    hrdma_am_arg_t *am      = arg;
    hrdma_worker_t *worker  = am->worker;
    int rndv                = !!(param->recv_attr & UCP_AM_RECV_ATTR_FLAG_RNDV);
    hrdma_mem_t *dst_mem    = NULL;
    void *dst               = NULL;
    uint64_t recv_cookie    = 0;
    ucp_request_param_t rparam;
    ucs_status_ptr_t sp;
    hrdma_req_t *req;
    hrdma_ep_t *ep = NULL;
    int status;

    if (param->recv_attr & UCP_AM_RECV_ATTR_FIELD_REPLY_EP) {
        ep = hrdma_worker_ep_find(worker, param->reply_ep);
    }
    if ((ep == NULL) || ep->closing || ep->failed) {
        /* Sent without a reply endpoint, on one we no longer own, or on one
         * that failed (its owner hears of that instead). */
        return rndv ? UCS_ERR_CANCELED : UCS_OK;
    }

    status = worker->cb.on_am(worker->cb.arg, ep->token, am->am_id, length,
                              hrdma_place_hdr_parse(header, header_length),
                              &dst, &dst_mem, &recv_cookie);
    if (status < 0) {
        /* Dropped: eager data is released by UCX on UCS_OK; a rendezvous
         * sender completes with the status we return. */
        return rndv ? UCS_ERR_CANCELED : UCS_OK;
    }

    if (!rndv) {
        if (length > 0) {
            memcpy(dst, data, length);
        }
        worker->cb.on_recv_done(worker->cb.arg, ep->token, recv_cookie,
                                HRDMA_OK, length);
        return UCS_OK;
    }

    memset(&rparam, 0, sizeof(rparam));
    rparam.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                          UCP_OP_ATTR_FIELD_USER_DATA;
    rparam.cb.recv_am   = hrdma_am_recv_data_cb;
    rparam.user_data    = worker;
    if (dst_mem != NULL) {
        rparam.op_attr_mask |= UCP_OP_ATTR_FIELD_MEMH;
        rparam.memh          = dst_mem->memh;
    }
    worker->recv_posting     = 1;
    worker->recv_posted_done = 0;
    sp = ucp_am_recv_data_nbx(worker->ucp_worker, data, dst, length, &rparam);
    worker->recv_posting     = 0;
    if (worker->recv_posted_done) {
        /* Its callback ran already (the request is gone): report it once. */
        worker->cb.on_recv_done(worker->cb.arg, ep->token, recv_cookie,
                                hrdma_status_from_ucs(
                                    worker->recv_posted_status),
                                (worker->recv_posted_status == UCS_OK) ?
                                    worker->recv_posted_length : 0);
    } else if (sp == NULL) {
        worker->cb.on_recv_done(worker->cb.arg, ep->token, recv_cookie,
                                HRDMA_OK, length);
    } else if (UCS_PTR_IS_ERR(sp)) {
        worker->cb.on_recv_done(worker->cb.arg, ep->token, recv_cookie,
                                hrdma_status_from_ucs(UCS_PTR_STATUS(sp)), 0);
    } else {
        req = sp;
        hrdma_req_track(worker, ep, req, HRDMA_REQ_RECV, ep->token,
                        recv_cookie, length);
    }
    /* UCX owns the descriptor once ucp_am_recv_data_nbx was called. */
    return UCS_OK;
}

/* ------------------------------------------------------------- worker -- */

int hrdma_worker_create(hrdma_ctx_t *ctx, const hrdma_worker_callbacks_t *cb,
                        hrdma_worker_t **worker_p)
{
    ucp_worker_params_t params;
    ucp_am_handler_param_t am_param;
    hrdma_worker_t *worker;
    ucs_status_t ucs;
    int status;
    uint16_t id;

    if ((ctx == NULL) || (cb == NULL) || (worker_p == NULL) ||
        (cb->on_conn_request == NULL) || (cb->on_am == NULL) ||
        (cb->on_recv_done == NULL) || (cb->on_op_done == NULL) ||
        (cb->on_ep_error == NULL)) {
        return HRDMA_ERR_INVALID;
    }
    (void)pthread_once(&hrdma_place_hdrs_once, hrdma_place_hdrs_fill);
    worker = calloc(1, sizeof(*worker));
    if (worker == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    worker->ctx    = ctx;
    worker->cb     = *cb;
    worker->close_timeout_ms = HRDMA_CLOSE_TIMEOUT_MS_DEFAULT;
    ucs_list_head_init(&worker->reqs);
    ucs_list_head_init(&worker->closing);
    worker->ep_map = kh_init(hrdma_ep_map);
    if (worker->ep_map == NULL) {
        status = HRDMA_ERR_NOMEM;
        goto err_free;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    params.thread_mode = UCS_THREAD_MODE_SINGLE;
    ucs = ucp_worker_create(ctx->ucp_ctx, &params, &worker->ucp_worker);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_worker_create failed: %s", ucs_status_string(ucs));
        status = hrdma_status_from_ucs(ucs);
        goto err_map;
    }
    ucs = ucp_worker_get_efd(worker->ucp_worker, &worker->efd);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_worker_get_efd failed: %s",
                        ucs_status_string(ucs));
        status = hrdma_status_from_ucs(ucs);
        goto err_worker;
    }

    for (id = 0; id < HRDMA_AM_IDS; id++) {
        worker->am_args[id].worker = worker;
        worker->am_args[id].am_id  = id;
        memset(&am_param, 0, sizeof(am_param));
        am_param.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID |
                              UCP_AM_HANDLER_PARAM_FIELD_FLAGS |
                              UCP_AM_HANDLER_PARAM_FIELD_CB |
                              UCP_AM_HANDLER_PARAM_FIELD_ARG;
        am_param.id         = id;
        am_param.flags      = UCP_AM_FLAG_WHOLE_MSG;
        am_param.cb         = hrdma_am_recv_cb;
        am_param.arg        = &worker->am_args[id];
        ucs = ucp_worker_set_am_recv_handler(worker->ucp_worker, &am_param);
        if (ucs != UCS_OK) {
            hrdma_log_error("ucp_worker_set_am_recv_handler failed: %s",
                            ucs_status_string(ucs));
            status = hrdma_status_from_ucs(ucs);
            goto err_worker;
        }
    }

    HRDMA_COUNT(ctx, workers, 1);
    *worker_p = worker;
    return HRDMA_OK;

err_worker:
    ucp_worker_destroy(worker->ucp_worker);
err_map:
    kh_destroy(hrdma_ep_map, worker->ep_map);
err_free:
    free(worker);
    return status;
}

static void hrdma_worker_closes_advance(hrdma_worker_t *worker);

int hrdma_worker_set_close_timeout(hrdma_worker_t *worker, int timeout_ms)
{
    if ((worker == NULL) || (timeout_ms < 0)) {
        return HRDMA_ERR_INVALID;
    }
    worker->close_timeout_ms = timeout_ms;
    return HRDMA_OK;
}

/* Progresses until every tracked request has completed (their callbacks
 * run as usual) or the drain time has passed; then gives the rest back to
 * UCX and reports them canceled. Afterwards no endpoint UCX still holds has
 * a request of ours queued on it: forced closes have canceled theirs (UCX
 * finishes that when the worker is destroyed at the latest), and a
 * graceful close reaches UCX only with none left. */
static void hrdma_worker_drain(hrdma_worker_t *worker)
{
    uint64_t limit = (uint64_t)worker->close_timeout_ms;
    uint64_t deadline;
    hrdma_req_t *req, copy;
    unsigned left = 0;

    if (limit > HRDMA_DESTROY_DRAIN_MS) {
        limit = HRDMA_DESTROY_DRAIN_MS;
    }
    deadline = hrdma_now_ms() + limit;
    while (!ucs_list_is_empty(&worker->reqs) && (hrdma_now_ms() < deadline)) {
        if (hrdma_worker_progress(worker) == 0) {
            hrdma_worker_wait(worker, 1);
        }
    }
    while (!ucs_list_is_empty(&worker->reqs)) {
        req  = ucs_list_head(&worker->reqs, hrdma_req_t, list);
        copy = *req;
        hrdma_req_untrack(req);
        ucp_request_free(req); /* UCX completes it without a callback */
        if (copy.kind != HRDMA_REQ_CLOSE) {
            hrdma_req_report(&copy, HRDMA_ERR_CANCELED, 0);
        }
        left++;
    }
    if (left > 0) {
        hrdma_log_error("worker destroy: %u request(s) still outstanding "
                        "after %llu ms released (operations among them "
                        "reported canceled)", left,
                        (unsigned long long)limit);
    }
}

int hrdma_worker_destroy(hrdma_worker_t *worker)
{
    if (worker == NULL) {
        return HRDMA_ERR_INVALID;
    }
    if ((worker->num_eps != 0) || (worker->num_listeners != 0) ||
        (worker->num_rkeys != 0)) {
        return HRDMA_ERR_BUSY;
    }
    hrdma_worker_drain(worker);
    ucp_worker_destroy(worker->ucp_worker);
    kh_destroy(hrdma_ep_map, worker->ep_map);
    HRDMA_COUNT(worker->ctx, workers, -1);
    free(worker);
    return HRDMA_OK;
}

int hrdma_worker_progress(hrdma_worker_t *worker)
{
    unsigned total = 0, n;
    int round;

    for (round = 0; round < HRDMA_PROGRESS_ROUNDS; round++) {
        n = ucp_worker_progress(worker->ucp_worker);
        if (n == 0) {
            break;
        }
        total += n;
    }
    if (!ucs_list_is_empty(&worker->closing)) {
        hrdma_worker_closes_advance(worker);
    }
    return (int)total;
}

/* Milliseconds until the next close deadline, -1 without closes. */
static int hrdma_worker_close_wait_ms(hrdma_worker_t *worker)
{
    uint64_t now, next = UINT64_MAX;
    hrdma_ep_t *ep;

    if (ucs_list_is_empty(&worker->closing)) {
        return -1; /* the common case: no clock read */
    }
    now = hrdma_now_ms();
    ucs_list_for_each(ep, &worker->closing, close_link) {
        if (ep->close_deadline_ms < next) {
            next = ep->close_deadline_ms;
        }
    }
    if (next == UINT64_MAX) {
        return -1;
    }
    return (next <= now) ? 0 : (int)((next - now > 1000) ? 1000 : next - now);
}

int hrdma_worker_wait(hrdma_worker_t *worker, int timeout_ms)
{
    struct pollfd pfd;
    ucs_status_t ucs;
    int ret, close_ms, capped = 0;

    /* Wake up for a close deadline: the next progress call acts on it. */
    close_ms = hrdma_worker_close_wait_ms(worker);
    if ((close_ms >= 0) && ((timeout_ms < 0) || (close_ms < timeout_ms))) {
        timeout_ms = close_ms;
        capped     = 1;
        if (timeout_ms == 0) {
            return HRDMA_OK;
        }
    }
    ucs = ucp_worker_arm(worker->ucp_worker);
    if (ucs == UCS_ERR_BUSY) {
        return HRDMA_OK; /* events are pending already */
    } else if (ucs != UCS_OK) {
        hrdma_log_error("ucp_worker_arm failed: %s", ucs_status_string(ucs));
        return hrdma_status_from_ucs(ucs);
    }
    pfd.fd      = worker->efd;
    pfd.events  = POLLIN;
    pfd.revents = 0;
    do {
        ret = poll(&pfd, 1, timeout_ms);
    } while ((ret < 0) && (errno == EINTR));
    if (ret < 0) {
        hrdma_log_error("poll on worker fd failed: %s", strerror(errno));
        return HRDMA_ERR_IO;
    }
    return ((ret == 0) && !capped) ? HRDMA_ERR_TIMEOUT : HRDMA_OK;
}

int hrdma_worker_signal(hrdma_worker_t *worker)
{
    ucs_status_t ucs = ucp_worker_signal(worker->ucp_worker);

    return hrdma_status_from_ucs(ucs);
}

/* ----------------------------------------------------------- listener -- */

typedef struct {
    ucp_conn_request_h ucp_req;
    hrdma_listener_t  *listener;
    int                handled;
} hrdma_conn_req_t;

static void hrdma_conn_cb(ucp_conn_request_h ucp_req, void *arg)
{
    hrdma_listener_t *listener = arg;
    hrdma_worker_t *worker     = listener->worker;
    hrdma_conn_req_t req       = {ucp_req, listener, 0};
    ucp_conn_request_attr_t attr;
    char peer[INET6_ADDRSTRLEN + 16] = "?";

    attr.field_mask = UCP_CONN_REQUEST_ATTR_FIELD_CLIENT_ADDR;
    if (ucp_conn_request_query(ucp_req, &attr) == UCS_OK) {
        hrdma_sockaddr_str(&attr.client_address, peer, sizeof(peer));
    }
    worker->cb.on_conn_request(worker->cb.arg, listener->token, &req, peer);
    if (!req.handled) {
        /* The contract says the callee decides before returning. */
        ucp_listener_reject(listener->ucp_listener, ucp_req);
    }
}

int hrdma_listener_create(hrdma_worker_t *worker, const char *ip, int port,
                          uint64_t token, hrdma_listener_t **listener_p)
{
    ucp_listener_params_t params;
    ucp_listener_attr_t attr;
    struct sockaddr_storage ss;
    hrdma_listener_t *listener;
    socklen_t ss_len;
    ucs_status_t ucs;
    int status;

    if ((worker == NULL) || (listener_p == NULL)) {
        return HRDMA_ERR_INVALID;
    }
    status = hrdma_sockaddr_parse(ip, port, &ss, &ss_len);
    if (status != HRDMA_OK) {
        hrdma_log_error("bad listen address '%s' port %d: %s",
                        (ip != NULL) ? ip : "(null)", port,
                        hrdma_status_str(status));
        return status;
    }
    listener = calloc(1, sizeof(*listener));
    if (listener == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    listener->worker = worker;
    listener->token  = token;

    memset(&params, 0, sizeof(params));
    params.field_mask         = UCP_LISTENER_PARAM_FIELD_SOCK_ADDR |
                                UCP_LISTENER_PARAM_FIELD_CONN_HANDLER;
    params.sockaddr.addr      = (const struct sockaddr *)&ss;
    params.sockaddr.addrlen   = ss_len;
    params.conn_handler.cb    = hrdma_conn_cb;
    params.conn_handler.arg   = listener;
    ucs = ucp_listener_create(worker->ucp_worker, &params,
                              &listener->ucp_listener);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_listener_create on %s:%d failed: %s", ip, port,
                        ucs_status_string(ucs));
        status = hrdma_status_from_ucs(ucs);
        goto err_free;
    }

    attr.field_mask = UCP_LISTENER_ATTR_FIELD_SOCKADDR;
    ucs = ucp_listener_query(listener->ucp_listener, &attr);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_listener_query failed: %s", ucs_status_string(ucs));
        status = hrdma_status_from_ucs(ucs);
        goto err_destroy;
    }
    listener->port = hrdma_sockaddr_port(&attr.sockaddr);
    worker->num_listeners++;
    *listener_p = listener;
    return HRDMA_OK;

err_destroy:
    ucp_listener_destroy(listener->ucp_listener);
err_free:
    free(listener);
    return status;
}

int hrdma_listener_port(const hrdma_listener_t *listener)
{
    return listener->port;
}

int hrdma_listener_destroy(hrdma_listener_t *listener)
{
    if (listener == NULL) {
        return HRDMA_ERR_INVALID;
    }
    ucp_listener_destroy(listener->ucp_listener);
    listener->worker->num_listeners--;
    free(listener);
    return HRDMA_OK;
}

/* ---------------------------------------------------------- endpoints -- */

static int hrdma_ep_create_common(hrdma_worker_t *worker,
                                  ucp_ep_params_t *params, uint64_t ep_token,
                                  hrdma_ep_t **ep_p)
{
    hrdma_ep_t *ep;
    ucs_status_t ucs;
    int status;

    ep = calloc(1, sizeof(*ep));
    if (ep == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    ep->worker = worker;
    ep->token  = ep_token;

    params->field_mask     |= UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                              UCP_EP_PARAM_FIELD_ERR_HANDLER;
    params->err_mode        = UCP_ERR_HANDLING_MODE_PEER;
    params->err_handler.cb  = hrdma_ep_err_cb;
    params->err_handler.arg = worker;
    ucs = ucp_ep_create(worker->ucp_worker, params, &ep->ucp_ep);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_ep_create failed: %s", ucs_status_string(ucs));
        status = hrdma_status_from_ucs(ucs);
        goto err_free;
    }
    status = hrdma_worker_ep_add(worker, ep);
    if (status != HRDMA_OK) {
        goto err_close;
    }
    worker->num_eps++;
    HRDMA_COUNT(worker->ctx, endpoints, 1);
    *ep_p = ep;
    return HRDMA_OK;

err_close:
    {
        ucp_request_param_t cparam = {
            .op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
            .flags        = UCP_EP_CLOSE_FLAG_FORCE
        };
        ucs_status_ptr_t sp = ucp_ep_close_nbx(ep->ucp_ep, &cparam);

        if (UCS_PTR_IS_PTR(sp)) {
            ucp_request_free(sp);
        }
    }
err_free:
    free(ep);
    return status;
}

int hrdma_conn_accept(hrdma_worker_t *worker, hrdma_conn_request_t req,
                      uint64_t ep_token, hrdma_ep_t **ep_p)
{
    hrdma_conn_req_t *creq = req;
    ucp_ep_params_t params;
    int status;

    if ((worker == NULL) || (creq == NULL) || (ep_p == NULL) || creq->handled ||
        (creq->listener->worker != worker)) {
        return HRDMA_ERR_INVALID;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask   = UCP_EP_PARAM_FIELD_CONN_REQUEST;
    params.conn_request = creq->ucp_req;
    status = hrdma_ep_create_common(worker, &params, ep_token, ep_p);
    /* ucp_ep_create consumes the request even when it fails. */
    creq->handled = 1;
    return status;
}

int hrdma_conn_reject(hrdma_worker_t *worker, uint64_t listener_token,
                      hrdma_conn_request_t req)
{
    hrdma_conn_req_t *creq = req;
    ucs_status_t ucs;

    if ((worker == NULL) || (creq == NULL) || creq->handled ||
        (creq->listener->worker != worker) ||
        (creq->listener->token != listener_token)) {
        return HRDMA_ERR_INVALID;
    }
    creq->handled = 1;
    ucs = ucp_listener_reject(creq->listener->ucp_listener, creq->ucp_req);
    return hrdma_status_from_ucs(ucs);
}

int hrdma_ep_connect(hrdma_worker_t *worker, const char *ip, int port,
                     uint64_t ep_token, hrdma_ep_t **ep_p)
{
    struct sockaddr_storage ss;
    ucp_ep_params_t params;
    socklen_t ss_len;
    int status;

    if ((worker == NULL) || (ep_p == NULL)) {
        return HRDMA_ERR_INVALID;
    }
    status = hrdma_sockaddr_parse(ip, port, &ss, &ss_len);
    if ((status != HRDMA_OK) || (port == 0)) {
        hrdma_log_error("bad connect address '%s' port %d: %s",
                        (ip != NULL) ? ip : "(null)", port,
                        hrdma_status_str(HRDMA_ERR_INVALID));
        return HRDMA_ERR_INVALID;
    }
    memset(&params, 0, sizeof(params));
    params.field_mask       = UCP_EP_PARAM_FIELD_FLAGS |
                              UCP_EP_PARAM_FIELD_SOCK_ADDR;
    params.flags            = UCP_EP_PARAMS_FLAGS_CLIENT_SERVER;
    params.sockaddr.addr    = (const struct sockaddr *)&ss;
    params.sockaddr.addrlen = ss_len;
    return hrdma_ep_create_common(worker, &params, ep_token, ep_p);
}

static int hrdma_ep_check(const hrdma_ep_t *ep)
{
    if (ep == NULL) {
        return HRDMA_ERR_INVALID;
    }
    return ep->closing ? HRDMA_ERR_CLOSED : HRDMA_OK;
}

int hrdma_ep_am_send(hrdma_ep_t *ep, uint16_t am_id, const void *buf,
                     size_t len, hrdma_mem_t *mem, uint64_t op_cookie)
{
    return hrdma_ep_am_send_placed(ep, am_id, buf, len, mem, -1, op_cookie);
}

int hrdma_ep_am_send_placed(hrdma_ep_t *ep, uint16_t am_id, const void *buf,
                            size_t len, hrdma_mem_t *mem, int64_t place_at,
                            uint64_t op_cookie)
{
    ucp_request_param_t param;
    const void *hdr = NULL;
    size_t hdr_len  = 0;
    int status      = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    if ((am_id >= HRDMA_AM_IDS) ||
        ((place_at >= 0) && ((uint64_t)place_at > len))) {
        return HRDMA_ERR_INVALID;
    }
    if (place_at >= 0) {
        hdr     = hrdma_place_hdrs[place_at % HRDMA_PLACE_PAGE];
        hdr_len = HRDMA_PLACE_HDR_LEN;
    }
    hrdma_req_param_init(&param, mem);
    param.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    param.flags         = UCP_AM_SEND_FLAG_REPLY;
    return hrdma_req_result(ep, ucp_am_send_nbx(ep->ucp_ep, am_id, hdr, hdr_len,
                                                buf, len, &param),
                            op_cookie, len);
}

int hrdma_rkey_unpack(hrdma_ep_t *ep, const void *packed, size_t len,
                      hrdma_rkey_t **rkey_p)
{
    hrdma_rkey_t *rkey;
    ucs_status_t ucs;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    if ((packed == NULL) || (len == 0) || (rkey_p == NULL)) {
        return HRDMA_ERR_INVALID;
    }
    rkey = calloc(1, sizeof(*rkey));
    if (rkey == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    ucs = ucp_ep_rkey_unpack(ep->ucp_ep, packed, &rkey->ucp_rkey);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_ep_rkey_unpack failed: %s", ucs_status_string(ucs));
        free(rkey);
        return hrdma_status_from_ucs(ucs);
    }
    rkey->worker = ep->worker;
    rkey->worker->num_rkeys++;
    *rkey_p = rkey;
    return HRDMA_OK;
}

void hrdma_rkey_destroy(hrdma_rkey_t *rkey)
{
    if (rkey == NULL) {
        return;
    }
    ucp_rkey_destroy(rkey->ucp_rkey);
    rkey->worker->num_rkeys--;
    free(rkey);
}

int hrdma_ep_put(hrdma_ep_t *ep, const void *local, size_t len,
                 hrdma_mem_t *mem, uint64_t remote_addr, hrdma_rkey_t *rkey,
                 uint64_t op_cookie)
{
    ucp_request_param_t param;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    if (rkey == NULL) {
        return HRDMA_ERR_INVALID;
    }
    hrdma_req_param_init(&param, mem);
    return hrdma_req_result(ep, ucp_put_nbx(ep->ucp_ep, local, len, remote_addr,
                                            rkey->ucp_rkey, &param),
                            op_cookie, len);
}

int hrdma_ep_get(hrdma_ep_t *ep, void *local, size_t len, hrdma_mem_t *mem,
                 uint64_t remote_addr, hrdma_rkey_t *rkey,
                 uint64_t op_cookie)
{
    ucp_request_param_t param;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    if (rkey == NULL) {
        return HRDMA_ERR_INVALID;
    }
    hrdma_req_param_init(&param, mem);
    return hrdma_req_result(ep, ucp_get_nbx(ep->ucp_ep, local, len, remote_addr,
                                            rkey->ucp_rkey, &param),
                            op_cookie, len);
}

int hrdma_ep_flush(hrdma_ep_t *ep, uint64_t op_cookie)
{
    ucp_request_param_t param;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    hrdma_req_param_init(&param, NULL);
    return hrdma_req_result(ep, ucp_ep_flush_nbx(ep->ucp_ep, &param), op_cookie,
                            0);
}

int hrdma_ep_stream_send(hrdma_ep_t *ep, const void *buf, size_t len,
                         hrdma_mem_t *mem, uint64_t op_cookie)
{
    ucp_request_param_t param;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    hrdma_req_param_init(&param, mem);
    return hrdma_req_result(ep, ucp_stream_send_nbx(ep->ucp_ep, buf, len,
                                                    &param),
                            op_cookie, len);
}

int hrdma_ep_stream_recv(hrdma_ep_t *ep, void *buf, size_t cap,
                         hrdma_mem_t *mem, uint64_t op_cookie,
                         size_t *received_p)
{
    ucp_request_param_t param;
    size_t length = 0;
    int status = hrdma_ep_check(ep);

    if (status != HRDMA_OK) {
        return status;
    }
    if ((received_p == NULL) || (cap == 0)) {
        return HRDMA_ERR_INVALID;
    }
    hrdma_req_param_init(&param, mem);
    param.cb.recv_stream = hrdma_stream_recv_cb;
    status = hrdma_req_result_kind(ep, ucp_stream_recv_nbx(ep->ucp_ep, buf,
                                                           cap, &length,
                                                           &param),
                                   HRDMA_REQ_STREAM_RECV, op_cookie, cap);
    *received_p = (status == HRDMA_OK) ? length : 0;
    return status;
}

static void hrdma_ep_closing_add(hrdma_ep_t *ep)
{
    if (!ep->on_closing) {
        ucs_list_add_tail(&ep->worker->closing, &ep->close_link);
        ep->on_closing = 1;
    }
}

static void hrdma_ep_closing_del(hrdma_ep_t *ep)
{
    if (ep->on_closing) {
        ucs_list_del(&ep->close_link);
        ep->on_closing = 0;
    }
}

/* Tracks the request a ucp_ep_close_nbx call handed back (CLOSING), or
 * notes that the endpoint is gone from UCX already. */
static int hrdma_ep_close_posted(hrdma_ep_t *ep, ucs_status_ptr_t sp,
                                 int silent)
{
    if (UCS_PTR_IS_PTR(sp)) {
        hrdma_req_track(ep->worker, ep, sp, HRDMA_REQ_CLOSE, ep->token,
                        ep->close_cookie, 0);
        ep->close_req         = sp;
        ep->close_req->silent = (uint8_t)silent;
        ep->close_state       = HRDMA_CLOSE_CLOSING;
        return HRDMA_INPROGRESS;
    }
    /* Done at once; closing a failed endpoint succeeds too (the failure
     * was reported). */
    ep->close_state = HRDMA_CLOSE_DONE;
    hrdma_worker_ep_remove(ep);
    return HRDMA_OK;
}

/* Forced close: UCX cancels the endpoint's requests (their callbacks run
 * with an error in a later progress call, or in hrdma_worker_destroy) and
 * releases the endpoint. */
static int hrdma_ep_close_force(hrdma_ep_t *ep, int silent)
{
    ucp_request_param_t param;

    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = hrdma_close_cb;
    param.flags        = UCP_EP_CLOSE_FLAG_FORCE;
    return hrdma_ep_close_posted(ep, ucp_ep_close_nbx(ep->ucp_ep, &param),
                                 silent);
}

/* Hands the endpoint to UCX once none of its requests are outstanding:
 * flush, then disconnect (forced if the endpoint failed). From here on the
 * close cannot be forced any more, and need not be. */
static int hrdma_ep_close_ucx(hrdma_ep_t *ep)
{
    ucp_request_param_t param;

    if (ep->failed) {
        /* A failed endpoint cannot be flushed any more. */
        return hrdma_ep_close_force(ep, 0);
    }
    memset(&param, 0, sizeof(param));
    param.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_FLAGS;
    param.cb.send      = hrdma_close_cb;
    param.flags        = 0;
    return hrdma_ep_close_posted(ep, ucp_ep_close_nbx(ep->ucp_ep, &param), 0);
}

/* The UCX close request in flight is nobody's any more: it completes
 * without a callback, or hrdma_worker_destroy releases it. */
static void hrdma_ep_close_orphan(hrdma_ep_t *ep)
{
    if (ep->close_req != NULL) {
        ep->close_req->ep     = NULL;
        ep->close_req->silent = 1;
        ep->close_req         = NULL;
    }
}

/* The close is over: report it to the owner, who may destroy the endpoint
 * from the callback. */
static void hrdma_ep_close_finish(hrdma_ep_t *ep, int status)
{
    hrdma_worker_t *worker = ep->worker;

    hrdma_ep_closing_del(ep);
    ep->close_state = HRDMA_CLOSE_DONE;
    hrdma_worker_ep_remove(ep);
    worker->cb.on_op_done(worker->cb.arg, ep->token, ep->close_cookie, status,
                          0);
}

/* Moves closes on (after progress): a DRAINING endpoint whose requests are
 * done goes to UCX; past the close timeout a DRAINING endpoint is
 * force-closed and a CLOSING one is left to UCX, and the owner gets
 * HRDMA_ERR_TIMEOUT. One endpoint at a time, starting over after each:
 * the owner's callbacks may close or destroy endpoints. */
static void hrdma_worker_closes_advance(hrdma_worker_t *worker)
{
    uint64_t now = hrdma_now_ms();
    hrdma_ep_t *ep;

again:
    ucs_list_for_each(ep, &worker->closing, close_link) {
        if (ep->close_state == HRDMA_CLOSE_DRAINING) {
            if ((ep->n_wait == 0) || ep->failed) {
                if (hrdma_ep_close_ucx(ep) != HRDMA_INPROGRESS) {
                    hrdma_ep_close_finish(ep, HRDMA_OK);
                }
                goto again;
            }
            if (now >= ep->close_deadline_ms) {
                if (hrdma_ep_close_force(ep, 0) == HRDMA_INPROGRESS) {
                    hrdma_ep_close_orphan(ep);
                }
                hrdma_ep_close_finish(ep, HRDMA_ERR_TIMEOUT);
                goto again;
            }
        } else if ((ep->close_state == HRDMA_CLOSE_CLOSING) &&
                   (now >= ep->close_deadline_ms)) {
            hrdma_ep_close_orphan(ep);
            hrdma_ep_close_finish(ep, HRDMA_ERR_TIMEOUT);
            goto again;
        }
    }
}

int hrdma_ep_close(hrdma_ep_t *ep, int force, uint64_t op_cookie)
{
    int status;

    if (ep == NULL) {
        return HRDMA_ERR_INVALID;
    }
    if (ep->closing) {
        return HRDMA_ERR_CLOSED;
    }
    ep->closing           = 1;
    ep->close_cookie      = op_cookie;
    ep->close_deadline_ms = hrdma_now_ms() +
                            (uint64_t)ep->worker->close_timeout_ms;
    if (force || ep->failed) {
        status = hrdma_ep_close_force(ep, 0);
    } else if (ep->n_wait == 0) {
        status = hrdma_ep_close_ucx(ep);
    } else {
        /* Requests of the endpoint are outstanding: UCX would destroy the
         * endpoint under them. Wait for them first (progress). */
        ep->close_state = HRDMA_CLOSE_DRAINING;
        status          = HRDMA_INPROGRESS;
    }
    if (status == HRDMA_INPROGRESS) {
        hrdma_ep_closing_add(ep);
    }
    return status;
}

void hrdma_ep_destroy(hrdma_ep_t *ep)
{
    hrdma_worker_t *worker;
    hrdma_req_t *req;

    if (ep == NULL) {
        return;
    }
    worker = ep->worker;
    if (!ep->closing) {
        /* Not closed by the owner: drop it without a callback. */
        ep->closing = 1;
        hrdma_ep_close_force(ep, 1);
    } else if (ep->close_state == HRDMA_CLOSE_DRAINING) {
        /* The owner stops waiting for a graceful close while requests of
         * the endpoint are outstanding: cancel them (force). */
        hrdma_ep_close_force(ep, 1);
    }
    hrdma_ep_closing_del(ep);
    /* A UCX close still in flight completes without a callback; no request
     * of ours is queued on that endpoint any more. */
    hrdma_ep_close_orphan(ep);
    /* Requests of the endpoint still outstanding (canceled by the forced
     * close) report to the owner by token, as before. */
    ucs_list_for_each(req, &worker->reqs, list) {
        if (req->ep == ep) {
            req->ep = NULL;
        }
    }
    hrdma_worker_ep_remove(ep);
    worker->num_eps--;
    HRDMA_COUNT(worker->ctx, endpoints, -1);
    free(ep);
}
