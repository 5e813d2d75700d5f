/*
 * A peer that stops progressing (alive but silent, or SIGSTOPped) while
 * this process has 8 MiB rendezvous sends or receives outstanding with it;
 * the endpoint is then closed and destroyed and the worker destroyed.
 * Nothing may hang or abort: every operation completes exactly once (at
 * the latest inside hrdma_worker_destroy), graceful closes end within the
 * close timeout, and the process's counters are back to zero.
 *
 * The server is this program re-executed with "--server <mode> <config>",
 * so it starts with no UCX state inherited from the parent:
 *   sink    receives one small message, says "got", then stops progressing
 *   source  receives one small message, posts NSENDS rendezvous sends to the
 *           client, progresses until the client has seen them all (the
 *           client says so on the server's stdin), says "sent", then stops
 *           progressing
 */
#include "engine_harness.h"

#include <signal.h>
#include <sys/prctl.h>
#include <stdlib.h>
#include <sys/select.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024 * 1024)
#define NSENDS 8
#define CLOSE_TIMEOUT_MS 1000

/* ------------------------------------------------------------- server -- */

static int server_main(const char *mode, const char *config)
{
    hrdma_ctx_t *ctx;
    side_t S;
    char small[64], line[16];
    char *buf = NULL;
    int i, status;

    (void)serve_first_message(&S, config, &ctx, small); /* held until the parent ends it */
    if (strcmp(mode, "source") == 0) {
        buf = malloc(8 * MiB);
        CHECK(buf != NULL);
        memset(buf, 0x5A, 8 * MiB);
        for (i = 0; i < NSENDS; i++) {
            status = hrdma_ep_am_send(S.accepted[0], 4, buf, 8 * MiB, NULL,
                                      100 + i);
            CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        }
        /* Progress until the client reports it has seen every message
         * (one byte on stdin), then go silent. */
        for (;;) {
            fd_set rfds;
            struct timeval tv = {0, 1000};

            hrdma_worker_progress(S.worker);
            FD_ZERO(&rfds);
            FD_SET(STDIN_FILENO, &rfds);
            if (select(STDIN_FILENO + 1, &rfds, NULL, NULL, &tv) > 0) {
                break;
            }
        }
        CHECK(read(STDIN_FILENO, line, 1) == 1);
        printf("sent\n");
    } else {
        printf("got\n");
    }
    fflush(stdout);
    for (;;) {
        pause();
    }
    return 0;
}

/* ------------------------------------------------------------- client -- */

typedef struct {
    pid_t pid;
    FILE *from;
    int   to;
    int   port;
} child_t;

static void child_start(child_t *c, const char *self, const char *mode,
                        const char *config)
{
    int out[2], in[2];
    char line[64];

    CHECK(pipe(out) == 0);
    CHECK(pipe(in) == 0);
    c->pid = fork();
    CHECK(c->pid >= 0);
    if (c->pid == 0) {
        /* Never outlive this process, whatever happens to it. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(out[1], STDOUT_FILENO);
        dup2(in[0], STDIN_FILENO);
        close(out[0]);
        close(out[1]);
        close(in[0]);
        close(in[1]);
        execl(self, self, "--server", mode, config, (char *)NULL);
        _exit(127);
    }
    close(out[1]);
    close(in[0]);
    c->to   = in[1];
    c->from = fdopen(out[0], "r");
    CHECK(c->from != NULL);
    CHECK(fgets(line, sizeof(line), c->from) != NULL);
    c->port = atoi(line);
    CHECK(c->port > 0);
}

/* Progresses the worker until the child prints a line; checks it. */
static void child_expect(child_t *c, side_t *C, const char *want)
{
    char line[64];
    double t0 = now_s();

    for (;;) {
        fd_set rfds;
        struct timeval tv = {0, 1000};

        hrdma_worker_progress(C->worker);
        FD_ZERO(&rfds);
        FD_SET(fileno(c->from), &rfds);
        if (select(fileno(c->from) + 1, &rfds, NULL, NULL, &tv) > 0) {
            break;
        }
        CHECK(now_s() - t0 < 20);
    }
    CHECK(fgets(line, sizeof(line), c->from) != NULL);
    CHECK(strcmp(line, want) == 0);
}

static void child_kill(child_t *c)
{
    int wstatus;

    kill(c->pid, SIGKILL);
    CHECK(waitpid(c->pid, &wstatus, 0) == c->pid);
    fclose(c->from);
    close(c->to);
}

static void progress_for(side_t *C, double seconds)
{
    double t0 = now_s();

    while (now_s() - t0 < seconds) {
        hrdma_worker_progress(C->worker);
    }
}

static void counters_zero(void)
{
    hrdma_ctx_stats_t st;

    CHECK_EQ(hrdma_process_stats(&st), 0);
    CHECK_EQ(st.endpoints, 0);
    CHECK_EQ(st.regions, 0);
    CHECK_EQ(st.bytes_registered, 0);
    CHECK_EQ(st.workers, 0);
}

enum {
    END_GRACEFUL_DESTROY, /* graceful close, destroy before it completes */
    END_GRACEFUL_WAIT,    /* graceful close, wait for it (close timeout) */
    END_FORCE,            /* force close, no progress before worker destroy */
    END_DESTROY           /* destroy without a close */
};

static const char *end_name[] = {
    "graceful close, ep destroyed while the close is in flight",
    "graceful close ends by the close timeout",
    "force close, worker destroyed without progress",
    "ep destroyed without a close",
};

/*
 * One round: connect to a fresh server, make it silent with 8 MiB
 * rendezvous transfers outstanding, end the endpoint one way, destroy
 * the worker.
 */
static void round_run(const char *self, const char *config, int receive,
                      int sigstop, int end, int idle)
{
    hrdma_ctx_t *ctx;
    hrdma_ep_t *ep;
    hrdma_mem_t *mem = NULL;
    side_t C;
    child_t child;
    char *buf = NULL;
    int status, i;
    double t0;
    char name[256];

    child_start(&child, self, receive ? "source" : "sink", config);
    memset(ops, 0, sizeof(ops));
    CHECK_EQ(hrdma_ctx_create(config, &ctx), HRDMA_OK);
    side_init(&C, "client", ctx, 2000);
    CHECK_EQ(hrdma_worker_set_close_timeout(C.worker, CLOSE_TIMEOUT_MS),
             HRDMA_OK);
    CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", child.port, 42, &ep),
             HRDMA_OK);
    status = hrdma_ep_am_send(ep, 1, "go", 3, NULL, 1);
    op_post(1, status, 3);
    WAIT_UNTIL(&C, NULL, ops[1].done, 10);
    CHECK_EQ(ops[1].status, HRDMA_OK);

    if (receive) {
        /* The server's rendezvous sends land in registered memory; the
         * receives are posted from on_am, then the server goes silent. */
        CHECK_EQ(hrdma_mem_map(ctx, (size_t)NSENDS * 8 * MiB, &mem),
                 HRDMA_OK);
        C.am_dst        = hrdma_mem_address(mem);
        C.am_dst_mem    = mem;
        C.am_dst_stride = 8 * MiB;
        WAIT_UNTIL(&C, NULL, C.am_count == NSENDS, 20);
        CHECK(write(child.to, "x", 1) == 1);
        child_expect(&child, &C, "sent\n");
    } else {
        child_expect(&child, &C, "got\n");
        buf = malloc(8 * MiB);
        CHECK(buf != NULL);
        memset(buf, 0x3C, 8 * MiB);
        for (i = 0; i < (idle ? 0 : NSENDS); i++) {
            status = hrdma_ep_am_send(ep, 2, buf, 8 * MiB, NULL, 10 + i);
            CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
            op_post(10 + i, status, 8 * MiB);
        }
    }
    if (sigstop) {
        CHECK(kill(child.pid, SIGSTOP) == 0);
    }
    progress_for(&C, 0.2);
    if (receive) {
        CHECK(C.recv_done < NSENDS); /* the data cannot all have arrived */
    } else {
        for (i = 0; i < (idle ? 0 : NSENDS); i++) {
            CHECK(!ops[10 + i].done); /* the server does not progress */
        }
    }

    t0 = now_s();
    switch (end) {
    case END_GRACEFUL_DESTROY:
    case END_GRACEFUL_WAIT:
        status = hrdma_ep_close(ep, 0, 50);
        CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        op_post(50, status, 0);
        if (end == END_GRACEFUL_WAIT) {
            WAIT_UNTIL(&C, NULL, ops[50].done, 20);
            printf("# close ended after %.3f s with %d (%s)\n", now_s() - t0,
                   ops[50].status, hrdma_status_str(ops[50].status));
            CHECK(now_s() - t0 < CLOSE_TIMEOUT_MS / 1000.0 + 2);
        } else {
            progress_for(&C, 0.3);
            CHECK(!ops[50].done); /* the silent peer holds it up */
        }
        hrdma_ep_destroy(ep);
        break;
    case END_FORCE:
        status = hrdma_ep_close(ep, 1, 50);
        CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        op_post(50, status, 0);
        hrdma_ep_destroy(ep);
        break;
    case END_DESTROY:
        hrdma_ep_destroy(ep);
        ops[50].done = 1;
        break;
    }
    CHECK_EQ(hrdma_worker_destroy(C.worker), HRDMA_OK);
    /* Every operation has completed exactly once (the harness checks
     * "once"), the transfers that never finished with an error. */
    if (receive) {
        CHECK_EQ(C.am_count, NSENDS);
        CHECK_EQ(C.recv_done, NSENDS);
        CHECK(C.recv_last_status < 0);
        CHECK_EQ(hrdma_mem_unmap(mem), HRDMA_OK);
    } else {
        for (i = 0; i < (idle ? 0 : NSENDS); i++) {
            CHECK(ops[10 + i].done);
            CHECK(ops[10 + i].status < 0);
        }
    }
    if (end != END_GRACEFUL_DESTROY && end != END_DESTROY) {
        CHECK(ops[50].done);
    }
    CHECK(now_s() - t0 < CLOSE_TIMEOUT_MS / 1000.0 + 5);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    counters_zero();
    child_kill(&child);
    free(buf);
    snprintf(name, sizeof(name), "%s, %s peer, %s: worker destroyed",
             idle ? "nothing outstanding" :
             receive ? "rendezvous receives" : "rendezvous sends",
             sigstop ? "SIGSTOPped" : "silent", end_name[end]);
    OK(name);
}

typedef struct {
    int receive, sigstop, end, idle;
} round_t;

static const round_t rounds[] = {
    {0, 0, END_GRACEFUL_DESTROY, 0},
    {0, 1, END_GRACEFUL_DESTROY, 0},
    {1, 0, END_GRACEFUL_DESTROY, 0},
    {0, 0, END_GRACEFUL_WAIT, 0},
    {1, 1, END_GRACEFUL_WAIT, 0},
    {0, 1, END_FORCE, 0},
    {1, 0, END_DESTROY, 0},
    /* Only the disconnect is left for the silent peer to answer. */
    {0, 1, END_GRACEFUL_WAIT, 1},
    {0, 0, END_GRACEFUL_DESTROY, 1},
};

/* No arguments: every round in both configurations. "--round N" runs
 * round N (0-based, configurations one after the other) alone. */
int main(int argc, char **argv)
{
    static const char *configs[] = {"TLS=tcp",
                                    "TLS=sm,tcp;MM_ERROR_HANDLING=y"};
    const size_t n_rounds = sizeof(rounds) / sizeof(rounds[0]);
    char self[4096];
    ssize_t n;
    size_t k, r;
    long only = -1;

    if ((argc == 4) && (strcmp(argv[1], "--server") == 0)) {
        return server_main(argv[2], argv[3]);
    }
    if ((argc == 3) && (strcmp(argv[1], "--round") == 0)) {
        only = atol(argv[2]);
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    CHECK(n > 0);
    self[n] = '\0';
    for (k = 0; k < sizeof(configs) / sizeof(configs[0]); k++) {
        printf("# config %s\n", configs[k]);
        for (r = 0; r < n_rounds; r++) {
            if ((only >= 0) && ((size_t)only != k * n_rounds + r)) {
                continue;
            }
            round_run(self, configs[k], rounds[r].receive, rounds[r].sigstop,
                      rounds[r].end, rounds[r].idle);
        }
    }
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
