/*
 * A peer process is SIGKILLed while this one has large rendezvous sends
 * outstanding to it: every send must complete with an error and
 * on_ep_error must fire, within seconds. The server is this program
 * re-executed with "--server <config>", so it starts with no UCX state
 * inherited from the parent.
 */
#include "engine_harness.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define MiB (1024 * 1024)
#define NSENDS 8

/* Accepts one connection, receives one small message, reports it on
 * stdout, then stops progressing (so the client's rendezvous sends stay
 * outstanding) until it is killed. */
static int server_main(const char *config)
{
    hrdma_ctx_t *ctx;
    side_t S;
    char small[64];

    (void)serve_first_message(&S, config, &ctx, small); /* killed while it holds them */
    printf("got\n");
    fflush(stdout);
    for (;;) {
        pause();
    }
    return 0;
}

static void run(const char *self, const char *config)
{
    hrdma_ctx_t *ctx;
    hrdma_ep_t *ep;
    side_t C;
    char line[64];
    int pfd[2], port, status, i, wstatus;
    pid_t pid;
    FILE *from_child;
    char *buf;
    double t0;

    printf("# config %s\n", config);
    CHECK(pipe(pfd) == 0);
    pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        dup2(pfd[1], STDOUT_FILENO);
        close(pfd[0]);
        close(pfd[1]);
        execl(self, self, "--server", config, (char *)NULL);
        _exit(127);
    }
    close(pfd[1]);
    from_child = fdopen(pfd[0], "r");
    CHECK(from_child != NULL);
    CHECK(fgets(line, sizeof(line), from_child) != NULL);
    port = atoi(line);
    CHECK(port > 0);

    CHECK_EQ(hrdma_ctx_create(config, &ctx), HRDMA_OK);
    side_init(&C, "client", ctx, 2000);
    CHECK_EQ(hrdma_ep_connect(C.worker, "127.0.0.1", port, 42, &ep), HRDMA_OK);
    status = hrdma_ep_am_send(ep, 1, "go", 3, NULL, 1);
    op_post(1, status, 3);
    WAIT_UNTIL(&C, NULL, ops[1].done, 10);
    CHECK_EQ(ops[1].status, HRDMA_OK);
    /* Wait (progressing) until the server says it got the message. */
    {
        fd_set rfds;
        struct timeval tv;
        t0 = now_s();
        for (;;) {
            FD_ZERO(&rfds);
            FD_SET(pfd[0], &rfds);
            tv.tv_sec = 0;
            tv.tv_usec = 1000;
            hrdma_worker_progress(C.worker);
            if (select(pfd[0] + 1, &rfds, NULL, NULL, &tv) > 0) {
                break;
            }
            CHECK(now_s() - t0 < 10);
        }
        CHECK(fgets(line, sizeof(line), from_child) != NULL);
        CHECK(strcmp(line, "got\n") == 0);
    }
    OK("child server connected");

    buf = malloc(8 * MiB);
    CHECK(buf != NULL);
    memset(buf, 0x3C, 8 * MiB);
    for (i = 0; i < NSENDS; i++) {
        status = hrdma_ep_am_send(ep, 2, buf, 8 * MiB, NULL, 10 + i);
        CHECK(status == HRDMA_OK || status == HRDMA_INPROGRESS);
        op_post(10 + i, status, 8 * MiB);
    }
    t0 = now_s();
    while (now_s() - t0 < 0.2) {
        hrdma_worker_progress(C.worker);
    }
    for (i = 0; i < NSENDS; i++) {
        CHECK(!ops[10 + i].done); /* the server does not progress */
    }
    OK("rendezvous sends outstanding");

    CHECK(kill(pid, SIGKILL) == 0);
    CHECK(waitpid(pid, &wstatus, 0) == pid);
    t0 = now_s();
    for (i = 0; i < NSENDS; i++) {
        WAIT_UNTIL(&C, NULL, ops[10 + i].done, 10);
    }
    WAIT_UNTIL(&C, NULL, C.ep_errors == 1, 10);
    printf("# after SIGKILL: on_ep_error %d (%s) after %.3f s, sends:",
           C.ep_error_status, hrdma_status_str(C.ep_error_status),
           now_s() - t0);
    for (i = 0; i < NSENDS; i++) {
        printf(" %d", ops[10 + i].status);
        CHECK(ops[10 + i].status < 0);
    }
    printf("\n");
    CHECK_EQ(C.ep_error_token, 42);
    OK("peer SIGKILLed: every send fails, on_ep_error fires");

    /* Posting after the failure fails too. */
    status = hrdma_ep_am_send(ep, 2, buf, 100, NULL, 30);
    op_post(30, status, 100);
    WAIT_UNTIL(&C, NULL, ops[30].done, 10);
    CHECK(ops[30].status < 0);
    status = hrdma_ep_close(ep, 0, 31);
    op_post(31, status, 0);
    WAIT_UNTIL(&C, NULL, ops[31].done, 10);
    hrdma_ep_destroy(ep);
    CHECK_EQ(C.ep_errors, 1);
    CHECK_EQ(hrdma_worker_destroy(C.worker), HRDMA_OK);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    fclose(from_child);
    free(buf);
    OK("close and teardown after peer failure");
}

int main(int argc, char **argv)
{
    char self[4096];
    ssize_t n;

    if ((argc == 3) && (strcmp(argv[1], "--server") == 0)) {
        return server_main(argv[2]);
    }
    n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    CHECK(n > 0);
    self[n] = '\0';
    run(self, "TLS=tcp");
    run(self, "TLS=sm,tcp;MM_ERROR_HANDLING=y");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
