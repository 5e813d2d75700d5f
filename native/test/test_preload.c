/*
 * libhrdma-preload keeps UCX off the error signals: with it loaded first,
 * libucs leaves a process's SIGSEGV/SIGBUS/SIGILL/SIGFPE handlers alone (a
 * JVM's, which raises SIGSEGV on purpose); without it, libucs takes them as
 * it loads. An explicit UCX_ERROR_SIGNALS from the user wins. Each case runs
 * in a child of its own, since libucs loads once per process. This test does
 * not link UCX: it loads libucs with dlopen, as the JVM loads libhrdma.
 */
#include "hrdma_test.h"

#include <dlfcn.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef HRDMA_PRELOAD_PATH
#error "HRDMA_PRELOAD_PATH: the path of libhrdma-preload.so"
#endif

static const int error_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE};
#define NSIG_TESTED (sizeof(error_signals) / sizeof(error_signals[0]))

static void own_handler(int signum, siginfo_t *info, void *ctx)
{
    (void)signum;
    (void)info;
    (void)ctx;
    _exit(99);
}

/* Bit i set: error_signals[i] is no longer this process's own handler. */
static int taken_after_load(int preload)
{
    struct sigaction sa, cur;
    int taken = 0;
    size_t i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = own_handler;
    sa.sa_flags     = SA_SIGINFO;
    for (i = 0; i < NSIG_TESTED; i++) {
        CHECK(sigaction(error_signals[i], &sa, NULL) == 0);
    }
    if (preload) {
        CHECK(dlopen(HRDMA_PRELOAD_PATH, RTLD_NOW | RTLD_GLOBAL) != NULL);
    }
    if (dlopen("libucs.so.0", RTLD_NOW | RTLD_GLOBAL) == NULL) {
        fprintf(stderr, "dlopen libucs: %s\n", dlerror());
        exit(2);
    }
    for (i = 0; i < NSIG_TESTED; i++) {
        CHECK(sigaction(error_signals[i], NULL, &cur) == 0);
        if (!(cur.sa_flags & SA_SIGINFO) || (cur.sa_sigaction != own_handler)) {
            taken |= 1 << i;
        }
    }
    return taken;
}

/* Runs taken_after_load in a child with UCX_ERROR_SIGNALS as given (NULL:
 * unset) and returns its bits. */
static int in_child(int preload, const char *user_signals)
{
    int status;
    pid_t pid = fork();

    CHECK(pid >= 0);
    if (pid == 0) {
        if (user_signals == NULL) {
            unsetenv("UCX_ERROR_SIGNALS");
        } else {
            setenv("UCX_ERROR_SIGNALS", user_signals, 1);
        }
        _exit(taken_after_load(preload));
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

int main(void)
{
    /* What the preload guards against: libucs takes all four as it loads. */
    CHECK_EQ(in_child(0, NULL), 0xf);
    OK("without the preload, libucs takes SEGV, BUS, ILL and FPE");

    CHECK_EQ(in_child(1, NULL), 0);
    OK("with the preload first, libucs takes none of them");

    /* The user's own list wins over the preload's. */
    CHECK_EQ(in_child(1, "SEGV"), 0x1);
    OK("an explicit UCX_ERROR_SIGNALS from the user wins");
    return 0;
}
