/*
 * Engine tests over TLS=tcp and over TLS=sm,tcp with MM_ERROR_HANDLING=y:
 * two workers in one process, progressed alternately from this thread.
 */
#include "engine_harness.h"
#include "hrdma_int.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#define MiB (1024 * 1024)

static void fill(void *p, size_t len, unsigned seed)
{
    unsigned char *c = p;
    size_t i;

    for (i = 0; i < len; i++) {
        c[i] = (unsigned char)((i * 2654435761u) >> 13) ^ (unsigned char)seed;
    }
}

static int same(const void *a, const void *b, size_t len)
{
    return memcmp(a, b, len) == 0;
}

/* A TCP port nobody listens on: bound, never listened, then closed. */
static int free_port(void)
{
    struct sockaddr_in sa = {.sin_family = AF_INET};
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM, 0), port;

    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(fd >= 0);
    CHECK(bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&sa, &len) == 0);
    port = ntohs(sa.sin_port);
    close(fd);
    return port;
}

static void close_ep(side_t *a, side_t *b, hrdma_ep_t *ep, int force,
                     uint64_t cookie)
{
    int status = hrdma_ep_close(ep, force, cookie);

    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    op_post(cookie, status, 0);
    WAIT_UNTIL(a, b, ops[cookie].done, 10);
    hrdma_ep_destroy(ep);
}

typedef struct {
    hrdma_worker_t *worker;
    int             delay_ms;
} signal_arg_t;

static void *signal_thread(void *p)
{
    signal_arg_t *a = p;

    usleep((useconds_t)a->delay_ms * 1000);
    CHECK_EQ(hrdma_worker_signal(a->worker), HRDMA_OK);
    return NULL;
}

static void test_bad_config(void)
{
    static const char *bad[] = {
        "tls=tcp", "TLS", "SOCKADDR_TLS_PRIORITY=rdmacm", "NO_SUCH_KNOB_XYZ=1",
        "RNDV_THRESH=lots", "TLS=tcp;=x", "TL S=tcp", "UCX_TLS=tcp",
    };
    hrdma_ctx_t *ctx = NULL;
    size_t i;

    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        CHECK_EQ(hrdma_ctx_create(bad[i], &ctx), HRDMA_ERR_INVALID);
    }
    CHECK_EQ(hrdma_ctx_create("", &ctx), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_create(";TLS=tcp;;SOCKADDR_TLS_PRIORITY=rdmacm,tcp;",
                              &ctx), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    OK("bad config strings give HRDMA_ERR_INVALID, good ones work");
}

static void run(const char *config)
{
    hrdma_ctx_t *ctx;
    hrdma_ctx_stats_t st;
    side_t S, C;
    hrdma_listener_t *listener;
    hrdma_ep_t *cep, *sep, *eps[16];
    hrdma_mem_t *smem, *cmem;
    hrdma_rkey_t *rkey;
    unsigned char packed[1024];
    size_t packed_len, i, got;
    uint64_t cookie = 1;
    int port, status, k;
    char *heap;
    char info[8192];

    printf("# config %s, ucx %s\n", config, hrdma_ucx_version());
    CHECK_EQ(hrdma_ctx_create(config, &ctx), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_info(ctx, info, sizeof(info)), HRDMA_OK);
    side_init(&S, "server", ctx, 1000);
    side_init(&C, "client", ctx, 2000);

    CHECK_EQ(hrdma_listener_create(S.worker, "127.0.0.1", 0, 77, &listener),
             HRDMA_OK);
    port = hrdma_listener_port(listener);
    CHECK(port > 0 && port < 65536);
    CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 1, &cep), HRDMA_OK);
    /* Post before the connection is up: it must go through. */
    status = hrdma_ep_am_send(cep, 3, "hello", 6, NULL, cookie);
    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    op_post(cookie, status, 6);

    char small[64] = {0};
    S.am_dst = small;
    WAIT_UNTIL(&S, &C, S.n_accepted == 1 && S.recv_done == 1 &&
                           ops[cookie].done, 10);
    sep = S.accepted[0];
    CHECK(strncmp(S.last_peer, "127.0.0.1:", 10) == 0);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    /* The reply_ep UCX hands the AM handler is the accepted endpoint. */
    CHECK_EQ(S.am_last_token, 1000);
    CHECK_EQ(S.am_last_id, 3);
    CHECK_EQ(S.am_last_len, 6);
    CHECK(strcmp(small, "hello") == 0);
    CHECK_EQ(S.recv_done_before_am, 0);
    OK("listener port 0, connect, accept, eager am, reply_ep is accepted ep");

    /* Server -> client over the accepted endpoint. */
    memset(small, 0, sizeof(small));
    C.am_dst = small;
    cookie++;
    status = hrdma_ep_am_send(sep, 15, "world", 6, NULL, cookie);
    op_post(cookie, status, 6);
    WAIT_UNTIL(&S, &C, C.recv_done == 1 && ops[cookie].done, 10);
    CHECK_EQ(C.am_last_token, 1);
    CHECK_EQ(C.am_last_id, 15);
    CHECK(strcmp(small, "world") == 0);
    CHECK_EQ(hrdma_ep_am_send(sep, 16, "x", 1, NULL, 99), HRDMA_ERR_INVALID);
    OK("eager am server to client, token of client ep");

    /* Placement hints: the page offset of the byte to align reaches on_am;
     * an unhinted message reports none. */
    CHECK_EQ(C.am_last_page_offset, -1);
    memset(small, 0, sizeof(small));
    C.am_dst = small;
    cookie++;
    status = hrdma_ep_am_send_placed(sep, 15, "placed", 7, NULL, 5, cookie);
    op_post(cookie, status, 7);
    WAIT_UNTIL(&S, &C, C.recv_done == 2 && ops[cookie].done, 10);
    CHECK_EQ(C.am_last_page_offset, 5);
    CHECK(strcmp(small, "placed") == 0);
    CHECK_EQ(hrdma_ep_am_send_placed(sep, 15, "x", 2, NULL, 3, 99),
             HRDMA_ERR_INVALID);
    OK("placed eager am carries its page offset; past the end is invalid");

    {
        /* What a hostile or newer peer could put in the header. */
        static const uint8_t v1[4]      = {1, 0, 0x34, 0x02};
        static const uint8_t v2[4]      = {2, 0, 0x34, 0x02};
        static const uint8_t page[4]    = {1, 0, 0x00, 0x10};
        static const uint8_t huge[4]    = {1, 0, 0xff, 0xff};
        static const uint8_t longer[12] = {1, 0, 0xff, 0x0f, 9, 9, 9, 9};

        CHECK_EQ(hrdma_place_hdr_parse(v1, 4), 0x234);
        CHECK_EQ(hrdma_place_hdr_parse(longer, 12), 4095);
        CHECK_EQ(hrdma_place_hdr_parse(v1, 3), -1);
        CHECK_EQ(hrdma_place_hdr_parse(NULL, 4), -1);
        CHECK_EQ(hrdma_place_hdr_parse(v2, 4), -1);
        CHECK_EQ(hrdma_place_hdr_parse(page, 4), -1);
        CHECK_EQ(hrdma_place_hdr_parse(huge, 4), -1);
    }
    OK("placement headers: short, unknown version, a page or more: none");

    /* Rendezvous 8 MiB, registered on both sides. */
    CHECK_EQ(hrdma_mem_map(ctx, 8 * MiB, &smem), HRDMA_OK);
    CHECK_EQ(hrdma_mem_map(ctx, 8 * MiB, &cmem), HRDMA_OK);
    fill(hrdma_mem_address(cmem), 8 * MiB, 1);
    memset(hrdma_mem_address(smem), 0, 8 * MiB);
    S.am_count = 0; S.recv_done = 0; S.recv_bytes = 0; S.on_am_returned = 0;
    S.am_dst = hrdma_mem_address(smem);
    S.am_dst_mem = smem;
    cookie++;
    status = hrdma_ep_am_send_placed(cep, 5, hrdma_mem_address(cmem), 8 * MiB,
                                     cmem, 4096 + 100, cookie);
    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    op_post(cookie, status, 8 * MiB);
    WAIT_UNTIL(&S, &C, S.recv_done == 1 && ops[cookie].done, 30);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    CHECK_EQ(ops[cookie].length, 8 * MiB);
    CHECK_EQ(S.recv_last_status, HRDMA_OK);
    CHECK_EQ(S.recv_bytes, 8 * MiB);
    CHECK_EQ(S.am_last_token, 1000);
    CHECK_EQ(S.recv_done_before_am, 0);
    CHECK(same(hrdma_mem_address(smem), hrdma_mem_address(cmem), 8 * MiB));
    CHECK_EQ(S.am_last_page_offset, 100);
    OK("rendezvous am 8 MiB registered, content, placement hint");

    /* Rendezvous from unregistered heap memory into unregistered heap. */
    heap = malloc(8 * MiB);
    char *heap_dst = calloc(1, 8 * MiB);
    CHECK(heap != NULL && heap_dst != NULL);
    fill(heap, 8 * MiB, 2);
    S.recv_done = 0; S.recv_bytes = 0; S.am_count = 0; S.on_am_returned = 0;
    S.am_dst = heap_dst; S.am_dst_mem = NULL;
    cookie++;
    status = hrdma_ep_am_send(cep, 6, heap, 8 * MiB, NULL, cookie);
    op_post(cookie, status, 8 * MiB);
    WAIT_UNTIL(&S, &C, S.recv_done == 1 && ops[cookie].done, 30);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    CHECK(same(heap, heap_dst, 8 * MiB));
    CHECK_EQ(S.am_last_page_offset, -1);
    OK("rendezvous am 8 MiB unregistered, content");

    /* A dropped rendezvous message: the sender completes, no recv_done. */
    S.recv_done = 0; S.am_count = 0; S.drop_am = 1;
    cookie++;
    status = hrdma_ep_am_send(cep, 6, heap, 8 * MiB, NULL, cookie);
    op_post(cookie, status, 8 * MiB);
    WAIT_UNTIL(&S, &C, S.am_count == 1 && ops[cookie].done, 30);
    printf("# dropped rndv am: sender status %d (%s)\n", ops[cookie].status,
           hrdma_status_str(ops[cookie].status));
    CHECK_EQ(S.recv_done, 0);
    S.drop_am = 0;
    /* ...and a dropped eager one. */
    S.am_count = 0; S.drop_am = 1;
    cookie++;
    status = hrdma_ep_am_send(cep, 6, "zz", 3, NULL, cookie);
    op_post(cookie, status, 3);
    WAIT_UNTIL(&S, &C, S.am_count == 1 && ops[cookie].done, 10);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    CHECK_EQ(S.recv_done, 0);
    S.drop_am = 0;
    OK("dropped am (rendezvous and eager)");

    /* Put and get 4 MiB with an rkey packed by the server region. */
    CHECK_EQ(hrdma_mem_pack_rkey(smem, packed, sizeof(packed), &packed_len),
             HRDMA_OK);
    CHECK_EQ(hrdma_rkey_unpack(cep, packed, packed_len, &rkey), HRDMA_OK);
    fill(hrdma_mem_address(cmem), 4 * MiB, 3);
    memset(hrdma_mem_address(smem), 0, 8 * MiB);
    cookie++;
    status = hrdma_ep_put(cep, hrdma_mem_address(cmem), 4 * MiB, cmem,
                          (uint64_t)(uintptr_t)hrdma_mem_address(smem) + 4096,
                          rkey, cookie);
    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    op_post(cookie, status, 4 * MiB);
    cookie++;
    status = hrdma_ep_flush(cep, cookie);
    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    op_post(cookie, status, 0);
    WAIT_UNTIL(&S, &C, ops[cookie - 1].done && ops[cookie].done, 30);
    CHECK_EQ(ops[cookie - 1].status, HRDMA_OK);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    CHECK(same((char *)hrdma_mem_address(smem) + 4096,
               hrdma_mem_address(cmem), 4 * MiB));
    OK("put 4 MiB + flush, content at remote");

    fill((char *)hrdma_mem_address(smem) + 4096, 4 * MiB, 4);
    memset(heap_dst, 0, 8 * MiB);
    cookie++;
    status = hrdma_ep_get(cep, heap_dst, 4 * MiB, NULL,
                          (uint64_t)(uintptr_t)hrdma_mem_address(smem) + 4096,
                          rkey, cookie);
    op_post(cookie, status, 4 * MiB);
    WAIT_UNTIL(&S, &C, ops[cookie].done, 30);
    CHECK_EQ(ops[cookie].status, HRDMA_OK);
    CHECK(same((char *)hrdma_mem_address(smem) + 4096, heap_dst, 4 * MiB));
    hrdma_rkey_destroy(rkey);
    OK("get 4 MiB into unregistered memory, content");

    /* Stream 1 MiB: receives complete with whatever arrived. */
    fill(heap, MiB, 5);
    memset(heap_dst, 0, MiB);
    cookie++;
    uint64_t send_cookie = cookie;
    status = hrdma_ep_stream_send(cep, heap, MiB, NULL, send_cookie);
    op_post(send_cookie, status, MiB);
    size_t total = 0;
    int recvs = 0;
    while (total < MiB) {
        cookie++;
        status = hrdma_ep_stream_recv(sep, heap_dst + total, MiB - total,
                                      (total == 0) ? smem : NULL, cookie, &got);
        CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        if (status == HRDMA_OK) {
            CHECK(got > 0);
            total += got;
        } else {
            op_post(cookie, status, 0);
            WAIT_UNTIL(&S, &C, ops[cookie].done, 30);
            CHECK_EQ(ops[cookie].status, HRDMA_OK);
            CHECK_EQ(ops[cookie].ep_token, 1000);
            CHECK(ops[cookie].length > 0);
            total += ops[cookie].length;
        }
        recvs++;
    }
    WAIT_UNTIL(&S, &C, ops[send_cookie].done, 30);
    CHECK_EQ(ops[send_cookie].status, HRDMA_OK);
    CHECK_EQ(total, MiB);
    CHECK(same(heap, heap_dst, MiB));
    printf("# stream 1 MiB arrived in %d receives\n", recvs);
    OK("stream send/recv 1 MiB, content");

    /* 16 endpoints at once, each sends 64 KiB. */
    memset(heap_dst, 0, 8 * MiB);
    S.am_count = 0; S.recv_done = 0; S.recv_bytes = 0; S.on_am_returned = 0;
    S.am_dst = heap_dst; S.am_dst_stride = 64 * 1024;
    uint64_t first = cookie + 1;
    for (k = 0; k < 16; k++) {
        CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 100 + k,
                                  &eps[k]), HRDMA_OK);
    }
    for (k = 0; k < 16; k++) {
        cookie++;
        fill(heap + k * 64 * 1024, 64 * 1024, 10 + k);
        status = hrdma_ep_am_send(eps[k], 1, heap + k * 64 * 1024, 64 * 1024,
                                  NULL, cookie);
        CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        op_post(cookie, status, 64 * 1024);
    }
    WAIT_UNTIL(&S, &C, S.recv_done == 16, 30);
    for (i = first; i <= cookie; i++) {
        WAIT_UNTIL(&S, &C, ops[i].done, 30);
        CHECK_EQ(ops[i].status, HRDMA_OK);
    }
    CHECK_EQ(S.n_accepted, 17);
    CHECK_EQ(S.recv_bytes, 16 * 64 * 1024);
    /* Each message is identified by the server token of its endpoint;
     * check content by matching seeds through the accept order. */
    {
        int seen[17] = {0};
        for (k = 0; k < 16; k++) {
            uint64_t t = S.am_tokens[k];
            CHECK(t >= 1001 && t <= 1016);
            CHECK(!seen[t - 1000]);
            seen[t - 1000] = 1;
        }
        for (k = 0; k < 16; k++) {
            int found = 0, j;
            for (j = 0; j < 16 && !found; j++) {
                found = same(heap_dst + k * 64 * 1024, heap + j * 64 * 1024,
                             64 * 1024);
            }
            CHECK(found);
        }
    }
    hrdma_ctx_stats(ctx, &st);
    CHECK_EQ(st.endpoints, 1 + 1 + 16 + 16);
    for (k = 0; k < 16; k++) {
        close_ep(&S, &C, eps[k], 0, ++cookie);
    }
    OK("16 endpoints concurrently");
    S.am_dst_stride = 0;

    /* A graceful close right after rendezvous sends, the peer progressing:
     * the sends complete (and arrive) before the endpoint goes to UCX,
     * which would otherwise destroy it under them. */
    {
        hrdma_ep_t *dep;
        int n_acc = S.n_accepted;
        uint64_t c0;

        memset(heap_dst, 0, 8 * MiB);
        S.am_count = 0; S.recv_done = 0; S.recv_bytes = 0;
        S.on_am_returned = 0; S.am_dst = heap_dst; S.am_dst_mem = NULL;
        S.am_dst_stride = 2 * MiB;
        fill(heap, 8 * MiB, 7);
        CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 650, &dep),
                 HRDMA_OK);
        c0 = cookie + 1;
        for (k = 0; k < 4; k++) {
            cookie++;
            status = hrdma_ep_am_send(dep, 2, heap + (size_t)k * 2 * MiB,
                                      2 * MiB, NULL, cookie);
            CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
            op_post(cookie, status, 2 * MiB);
        }
        cookie++;
        status = hrdma_ep_close(dep, 0, cookie);
        CHECK(status == HRDMA_INPROGRESS);
        op_post(cookie, status, 0);
        CHECK_EQ(hrdma_ep_am_send(dep, 2, heap, 10, NULL, cookie + 1),
                 HRDMA_ERR_CLOSED);
        WAIT_UNTIL(&S, &C, ops[cookie].done && S.recv_done == 4, 30);
        CHECK_EQ(ops[cookie].status, HRDMA_OK);
        for (i = c0; i < c0 + 4; i++) {
            CHECK(ops[i].done);
            CHECK_EQ(ops[i].status, HRDMA_OK);
        }
        CHECK_EQ(S.recv_bytes, 8 * MiB);
        CHECK(same(heap, heap_dst, 8 * MiB));
        hrdma_ep_destroy(dep);
        CHECK_EQ(S.n_accepted, n_acc + 1);
        close_ep(&S, &C, S.accepted[n_acc], 1, ++cookie);
        S.am_dst_stride = 0;
    }
    OK("graceful close waits for the endpoint's rendezvous sends");

    /* Connect to a port with no listener. */
    {
        hrdma_ep_t *bad;
        int before = C.ep_errors;

        CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", free_port(), 555,
                                  &bad), HRDMA_OK);
        cookie++;
        status = hrdma_ep_am_send(bad, 1, heap, 1024, NULL, cookie);
        op_post(cookie, status, 1024);
        cookie++;
        status = hrdma_ep_am_send(bad, 1, heap, 4 * MiB, NULL, cookie);
        op_post(cookie, status, 4 * MiB);
        WAIT_UNTIL(&S, &C, C.ep_errors == before + 1 && ops[cookie].done &&
                               ops[cookie - 1].done, 20);
        printf("# no listener: on_ep_error %d (%s), ops %d %d\n",
               C.ep_error_status, hrdma_status_str(C.ep_error_status),
               ops[cookie - 1].status, ops[cookie].status);
        CHECK_EQ(C.ep_error_token, 555);
        CHECK_EQ(C.ep_error_status, HRDMA_ERR_UNREACHABLE);
        CHECK(ops[cookie - 1].status < 0);
        CHECK(ops[cookie].status < 0);
        close_ep(&S, &C, bad, 0, ++cookie);
        CHECK_EQ(C.ep_errors, before + 1); /* once per endpoint */
    }
    OK("connect without listener: on_ep_error, posted ops fail");

    /* Rejected connection. */
    {
        hrdma_ep_t *rej;
        int before = C.ep_errors;

        S.reject = 1;
        CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 556, &rej),
                 HRDMA_OK);
        cookie++;
        status = hrdma_ep_am_send(rej, 1, heap, 100, NULL, cookie);
        op_post(cookie, status, 100);
        WAIT_UNTIL(&S, &C, C.ep_errors == before + 1 && ops[cookie].done, 20);
        printf("# rejected: on_ep_error %d (%s), op %d\n", C.ep_error_status,
               hrdma_status_str(C.ep_error_status), ops[cookie].status);
        CHECK_EQ(C.ep_error_status, HRDMA_ERR_UNREACHABLE);
        CHECK(ops[cookie].status < 0);
        close_ep(&S, &C, rej, 1, ++cookie);
        S.reject = 0;
    }
    OK("rejected connection fails the client endpoint");

    /* The server force-closes its endpoint under outstanding rendezvous
     * sends: the client's sends fail and on_ep_error fires. */
    {
        hrdma_ep_t *vep;
        int before = C.ep_errors, n_acc = S.n_accepted;
        uint64_t c0;

        CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 600, &vep),
                 HRDMA_OK);
        cookie++;
        status = hrdma_ep_am_send(vep, 1, "hi", 3, NULL, cookie);
        op_post(cookie, status, 3);
        S.recv_done = 0; S.am_dst = small;
        WAIT_UNTIL(&S, &C, S.n_accepted == n_acc + 1 && S.recv_done == 1 &&
                               ops[cookie].done, 10);
        S.drop_am = 1; /* should the server see them before it closes */
        c0 = cookie + 1;
        for (k = 0; k < 4; k++) {
            cookie++;
            status = hrdma_ep_am_send(vep, 2, heap, 8 * MiB, NULL, cookie);
            op_post(cookie, status, 8 * MiB);
        }
        /* Only the client progresses: the sends stay outstanding. */
        for (k = 0; k < 100; k++) {
            progress2(&C, NULL);
        }
        hrdma_ep_t *victim = S.accepted[S.n_accepted - 1];
        close_ep(&S, NULL, victim, 1, ++cookie);
        WAIT_UNTIL(&S, &C, C.ep_errors == before + 1, 30);
        for (i = c0; i < c0 + 4; i++) {
            WAIT_UNTIL(&S, &C, ops[i].done, 30);
        }
        printf("# server force close: on_ep_error %d (%s), ops %d %d %d %d\n",
               C.ep_error_status, hrdma_status_str(C.ep_error_status),
               ops[c0].status, ops[c0 + 1].status, ops[c0 + 2].status,
               ops[c0 + 3].status);
        CHECK_EQ(C.ep_error_token, 600);
        for (i = c0; i < c0 + 4; i++) {
            CHECK(ops[i].status < 0 || ops[i].status == HRDMA_OK);
        }
        CHECK(ops[c0 + 3].status < 0);
        /* Posting on a failed endpoint fails or completes with an error. */
        cookie++;
        status = hrdma_ep_am_send(vep, 2, heap, 100, NULL, cookie);
        op_post(cookie, status, 100);
        WAIT_UNTIL(&S, &C, ops[cookie].done, 10);
        CHECK(ops[cookie].status < 0);
        close_ep(&S, &C, vep, 0, ++cookie);
        S.drop_am = 0;
    }
    OK("peer force-closes mid-transfer: sends fail, on_ep_error once");

    /* worker_signal from another thread wakes worker_wait. */
    {
        pthread_t th;
        signal_arg_t sa = {C.worker, 300};
        double t0;

        for (k = 0; k < 100; k++) {
            progress2(&S, &C);
        }
        status = hrdma_worker_wait(C.worker, 50);
        CHECK(status == HRDMA_OK || status == HRDMA_ERR_TIMEOUT);
        CHECK_EQ(pthread_create(&th, NULL, signal_thread, &sa), 0);
        t0 = now_s();
        do {
            hrdma_worker_progress(C.worker);
            status = hrdma_worker_wait(C.worker, 5000);
        } while (status == HRDMA_OK && now_s() - t0 < 0.25);
        CHECK_EQ(status, HRDMA_OK);
        CHECK(now_s() - t0 < 3.0);
        CHECK_EQ(pthread_join(th, NULL), 0);
        hrdma_worker_progress(C.worker);
    }
    OK("worker_signal from another thread wakes worker_wait");

    /* One more client endpoint, for the teardown below. */
    hrdma_ep_t *gep;
    int gep_peer = S.n_accepted;

    CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 700, &gep),
             HRDMA_OK);
    cookie++;
    status = hrdma_ep_am_send(gep, 3, "bye", 4, NULL, cookie);
    op_post(cookie, status, 4);
    WAIT_UNTIL(&S, &C, ops[cookie].done && S.n_accepted == gep_peer + 1, 10);

    /* Teardown: BUSY while things remain, counters back to zero. */
    CHECK_EQ(hrdma_worker_destroy(S.worker), HRDMA_ERR_BUSY);
    close_ep(&S, &C, cep, 0, ++cookie);
    for (k = 0; k < S.n_accepted; k++) {
        if (k == 0 || (k >= 1 && k <= 16)) {
            close_ep(&S, &C, S.accepted[k], 1, ++cookie);
        }
    }
    /* An endpoint destroyed while its graceful close is in flight (an owner
     * that stops waiting), and no progress until its worker is destroyed:
     * UCX asserts in ucp_worker_destroy if that close request is still held. */
    close_ep(&S, NULL, S.accepted[gep_peer], 1, ++cookie);
    status = hrdma_ep_close(gep, 0, ++cookie);
    CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
    hrdma_ep_destroy(gep);
    CHECK_EQ(hrdma_worker_destroy(S.worker), HRDMA_ERR_BUSY); /* listener */
    CHECK_EQ(hrdma_listener_destroy(listener), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_ERR_BUSY);
    CHECK_EQ(hrdma_mem_unmap(smem), HRDMA_OK);
    CHECK_EQ(hrdma_mem_unmap(cmem), HRDMA_OK);
    hrdma_ctx_stats(ctx, &st);
    CHECK_EQ(st.endpoints, 0);
    CHECK_EQ(st.regions, 0);
    CHECK_EQ(st.bytes_registered, 0);
    CHECK_EQ(st.workers, 2);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_ERR_BUSY); /* workers */
    CHECK_EQ(hrdma_worker_destroy(S.worker), HRDMA_OK);
    CHECK_EQ(hrdma_worker_destroy(C.worker), HRDMA_OK);
    hrdma_ctx_stats(ctx, &st);
    CHECK_EQ(st.workers, 0);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    /* and the process's totals: nothing left by this run (run() is the
     * only user of contexts in this program) */
    CHECK_EQ(hrdma_process_stats(&st), 0);
    CHECK_EQ(st.endpoints, 0);
    CHECK_EQ(st.regions, 0);
    CHECK_EQ(st.bytes_registered, 0);
    CHECK_EQ(st.workers, 0);
    free(heap);
    free(heap_dst);
    OK("teardown (an endpoint's close in flight too), counters back to zero");
}

int main(void)
{
    test_bad_config();
    run("TLS=tcp");
    run("TLS=sm,tcp;MM_ERROR_HANDLING=y");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
