/*
 * libhrdma-preload: loaded by the Java loader just before libhrdma.
 *
 * UCX's memory hooks (UCM, "bistro" mode) rewrite the first bytes of libc's
 * brk, sbrk, mmap, munmap, ... while libucs is being loaded. In a JVM other
 * threads call those functions all the time; a thread that runs one of them
 * while it is half rewritten dies of SIGILL or SIGSEGV and takes the process
 * (a DataNode) with it. UCX 1.13 has no lock against this.
 *
 * Every buffer the native core hands to UCX is registered once (ucp_mem_map)
 * and kept, so UCX's registration cache, the only user of the memory events,
 * is not needed. This library turns the events off before libucs loads,
 * unless the user chose a value: it has no dependency and does nothing but
 * this, so nothing of UCX runs before it.
 *
 * libucs also takes SIGSEGV, SIGBUS, SIGILL and SIGFPE (UCX_ERROR_SIGNALS)
 * while it loads. HotSpot raises SIGSEGV on purpose (safepoint polls,
 * implicit null checks) in every Java thread; one raised between libucs's
 * load and JNI_OnLoad, which gives the JVM its handlers back, reached UCX's
 * handler and the JVM aborted. This library empties that list too, unless
 * the user set it, so UCX never takes them.
 *
 * And libucs takes SIGHUP (UCX_DEBUG_SIGNO) as it loads, for a debug mode of
 * its own: its handler swallowed the signal, so a JVM (a DataNode, a client
 * application) sent SIGHUP neither logged it (Hadoop's SignalLogger) nor ran
 * its shutdown hooks and exited, as a JVM does. This library sets it to 0
 * (none), unless the user set it.
 *
 * It runs while the JVM's other threads run, and glibc's setenv is not safe
 * against a getenv in another thread. Exported before the JVM starts (the
 * Java side's UcxStartEnvironment lists them; bin/hrdma cluster and the docker
 * images do, docs/install.md gives the hadoop-env.sh line), all three are
 * found and setenv with overwrite 0 changes nothing.
 */
#include <stdlib.h>

__attribute__((constructor)) static void hrdma_preload_ucx_env(void)
{
    /* overwrite=0: an explicit UCX_MEM_EVENTS from the user wins. */
    setenv("UCX_MEM_EVENTS", "no", 0);
    /* Empty: UCX installs no error-signal handler at all. */
    setenv("UCX_ERROR_SIGNALS", "", 0);
    /* 0: UCX takes no signal for its debug mode (UCX's default: SIGHUP). */
    setenv("UCX_DEBUG_SIGNO", "0", 0);
}
