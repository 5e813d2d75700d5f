/*
 * libhrdma-preload keeps UCX off the error signals and off SIGHUP: with it
 * loaded first, libucs leaves a process's SIGSEGV/SIGBUS/SIGILL/SIGFPE and
 * SIGHUP handlers alone (a JVM's, which raises SIGSEGV on purpose and runs
 * its shutdown hooks on SIGHUP); without it, libucs takes them as it loads.
 * An explicit UCX_ERROR_SIGNALS or UCX_DEBUG_SIGNO from the user wins over
 * the preload. hrdma_restore_signal_handlers (JNI_OnLoad) gives back what
 * libucs took, but a debug signal the user asked for. Each case runs in a
 * child of its own, since libucs loads once per process. This test does not
 * link UCX: it loads libucs or libhrdma with dlopen, as the JVM loads
 * libhrdma.
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
#ifndef HRDMA_LIB_PATH
#error "HRDMA_LIB_PATH: the path of libhrdma.so"
#endif

/* Bits 0-3: the error signals; bit 4: SIGHUP, UCX's default debug signal. */
static const int watched[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGHUP};
#define NSIG_TESTED (sizeof(watched) / sizeof(watched[0]))
#define ERRORS 0xf
#define HUP    0x10

static void own_handler(int signum, siginfo_t *info, void *ctx)
{
    (void)signum;
    (void)info;
    (void)ctx;
    _exit(99);
}

/* Bit i set: watched[i] is no longer this process's own handler. With
 * restore, libhrdma is loaded (it pulls libucs in) and its
 * hrdma_restore_signal_handlers called, as JNI_OnLoad does. */
static int taken_after_load(int preload, int restore)
{
    struct sigaction sa, cur;
    void (*restore_fn)(void);
    void *lib;
    int taken = 0;
    size_t i;

    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = own_handler;
    sa.sa_flags     = SA_SIGINFO;
    for (i = 0; i < NSIG_TESTED; i++) {
        CHECK(sigaction(watched[i], &sa, NULL) == 0);
    }
    if (preload) {
        CHECK(dlopen(HRDMA_PRELOAD_PATH, RTLD_NOW | RTLD_GLOBAL) != NULL);
    }
    lib = dlopen(restore ? HRDMA_LIB_PATH : "libucs.so.0", RTLD_NOW | RTLD_GLOBAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        exit(2);
    }
    if (restore) {
        *(void **)&restore_fn = dlsym(lib, "hrdma_restore_signal_handlers");
        CHECK(restore_fn != NULL);
        restore_fn();
    }
    for (i = 0; i < NSIG_TESTED; i++) {
        CHECK(sigaction(watched[i], NULL, &cur) == 0);
        if (!(cur.sa_flags & SA_SIGINFO) || (cur.sa_sigaction != own_handler)) {
            taken |= 1 << i;
        }
    }
    return taken;
}

static void set_or_unset(const char *name, const char *value)
{
    if (value == NULL) {
        unsetenv(name);
    } else {
        setenv(name, value, 1);
    }
}

/* Runs taken_after_load in a child with UCX_ERROR_SIGNALS and
 * UCX_DEBUG_SIGNO as given (NULL: unset) and returns its bits. */
static int in_child(int preload, int restore, const char *user_signals,
                    const char *user_debug_signo)
{
    int status;
    pid_t pid = fork();

    CHECK(pid >= 0);
    if (pid == 0) {
        set_or_unset("UCX_ERROR_SIGNALS", user_signals);
        set_or_unset("UCX_DEBUG_SIGNO", user_debug_signo);
        _exit(taken_after_load(preload, restore));
    }
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK(WIFEXITED(status));
    return WEXITSTATUS(status);
}

int main(void)
{
    /* What the preload guards against: libucs takes all five as it loads. */
    CHECK_EQ(in_child(0, 0, NULL, NULL), ERRORS | HUP);
    OK("without the preload, libucs takes SEGV, BUS, ILL, FPE and HUP");

    CHECK_EQ(in_child(1, 0, NULL, NULL), 0);
    OK("with the preload first, libucs takes none of them");

    /* The user's own settings win over the preload's. */
    CHECK_EQ(in_child(1, 0, "SEGV", NULL), 0x1);
    OK("an explicit UCX_ERROR_SIGNALS from the user wins");
    CHECK_EQ(in_child(1, 0, NULL, "HUP"), HUP);
    OK("an explicit UCX_DEBUG_SIGNO from the user wins");

    /* JNI_OnLoad's restore: everything back, with the preload or without. */
    CHECK_EQ(in_child(0, 1, NULL, NULL), 0);
    OK("without the preload, the restore gives back all five");
    CHECK_EQ(in_child(1, 1, "SEGV", NULL), 0);
    OK("the restore gives back an error signal the user listed (the JVM needs it)");
    /* but a debug signal the user asked UCX to take stays UCX's */
    CHECK_EQ(in_child(1, 1, NULL, "HUP"), HUP);
    OK("the restore leaves the user's UCX_DEBUG_SIGNO to UCX");
    return 0;
}
