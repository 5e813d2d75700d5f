#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#define LEN (1024u * 1024u)
#define THREADS 4
#define ROUNDS 50

static void shm_path(char *path, size_t cap, const char *what)
{
    snprintf(path, cap, "/dev/shm/hrdma_test_shm.%ld.%s", (long)getpid(), what);
}

static int exists(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0;
}

static char seg[128], link_path[128], full[128], bad[128];

/* Runs at exit, also after a failed CHECK: nothing stays in /dev/shm. */
static void remove_files(void)
{
    char path[128], what[32];

    unlink(seg);
    unlink(link_path);
    unlink(full);
    unlink(bad);
    for (int t = 0; t < THREADS; t++) {
        for (int i = 0; i < ROUNDS; i++) {
            snprintf(what, sizeof(what), "t%d.%d", t, i);
            shm_path(path, sizeof(path), what);
            unlink(path);
        }
    }
}

static void *create_unmap_loop(void *arg)
{
    char path[128], what[32];
    void *p;

    for (int i = 0; i < ROUNDS; i++) {
        snprintf(what, sizeof(what), "t%ld.%d", (long)(intptr_t)arg, i);
        shm_path(path, sizeof(path), what);
        CHECK_EQ(hrdma_shm_create(path, LEN / 16, &p), HRDMA_OK);
        ((unsigned char *)p)[0] = 1;
        CHECK_EQ(hrdma_shm_unmap(p, LEN / 16), HRDMA_OK);
        CHECK_EQ(unlink(path), 0);
    }
    return NULL;
}

int main(void)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t start = hrdma_shm_mapped_bytes();
    unsigned char *w = NULL, *r = NULL, *x = NULL;
    pthread_t threads[THREADS];
    struct statvfs vfs;
    struct stat st;

    shm_path(seg, sizeof(seg), "seg");
    shm_path(link_path, sizeof(link_path), "link");
    shm_path(full, sizeof(full), "full");
    shm_path(bad, sizeof(bad), "bad");
    atexit(remove_files);

    /* create: the size is set and every page reserved, mode 0600 */
    CHECK_EQ(hrdma_shm_create(seg, LEN, (void **)&w), HRDMA_OK);
    CHECK_EQ((uintptr_t)w % (uintptr_t)page, 0);
    CHECK_EQ(stat(seg, &st), 0);
    CHECK_EQ(st.st_size, LEN);
    CHECK((uint64_t)st.st_blocks * 512 >= LEN);
    CHECK_EQ(st.st_mode & 0777, 0600);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + LEN);
    for (size_t i = 0; i < LEN; i++) {
        w[i] = (unsigned char)(i * 31 + 7);
    }
    OK("create: sized, reserved, 0600, page aligned, counted");

    /* a second, read-only mapping of the same file sees the writer's bytes,
     * also those stored after it was mapped */
    CHECK_EQ(hrdma_shm_open(seg, LEN, (void **)&r), HRDMA_OK);
    CHECK(r != w);
    CHECK_EQ((uintptr_t)r % (uintptr_t)page, 0);
    CHECK(memcmp(r, w, LEN) == 0);
    w[LEN - 1] ^= 0xff;
    CHECK_EQ(r[LEN - 1], (unsigned char)((LEN - 1) * 31 + 7) ^ 0xff);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + 2 * LEN);
    OK("open: a second mapping sees the pattern and later stores");

    /* O_EXCL: an existing path is refused and left as it was */
    errno = 0;
    CHECK_EQ(hrdma_shm_create(seg, LEN, (void **)&x), HRDMA_ERR_BUSY);
    CHECK_EQ(errno, EEXIST);
    CHECK(x == NULL);
    CHECK_EQ(stat(seg, &st), 0);
    CHECK_EQ(st.st_size, LEN);
    CHECK_EQ(r[0], 7);
    CHECK_EQ(r[1], 38);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + 2 * LEN);
    OK("create on an existing path: BUSY, the file intact");

    /* bad lengths and arguments */
    CHECK_EQ(hrdma_shm_open(seg, LEN + (size_t)page, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_create(bad, 0, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_create(bad, (size_t)page + 100, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(errno, EINVAL);
    CHECK(!exists(bad));
    CHECK_EQ(hrdma_shm_open(seg, 0, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_open(seg, 100, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_create(NULL, LEN, (void **)&x), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_open(seg, LEN, NULL), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_open("/dev/shm", (size_t)page, (void **)&x), HRDMA_ERR_INVALID);
    CHECK(x == NULL);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + 2 * LEN);
    OK("longer than the file, length 0 or not whole pages, not a file: INVALID");

    /* a missing file and a symbolic link are I/O errors, errno says which */
    errno = 0;
    CHECK_EQ(hrdma_shm_open(bad, LEN, (void **)&x), HRDMA_ERR_IO);
    CHECK_EQ(errno, ENOENT);
    CHECK_EQ(symlink(seg, link_path), 0);
    errno = 0;
    CHECK_EQ(hrdma_shm_open(link_path, LEN, (void **)&x), HRDMA_ERR_IO);
    CHECK_EQ(errno, ELOOP);
    CHECK_EQ(hrdma_shm_create(link_path, LEN, (void **)&x), HRDMA_ERR_BUSY);
    CHECK_EQ(unlink(link_path), 0);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + 2 * LEN);
    OK("missing file, symbolic link: IO with errno ENOENT, ELOOP");

    /* more than the whole tmpfs: fallocate fails at once with ENOSPC, the
     * file created for it is removed (a tmpfs without a size limit would
     * fill memory instead: skipped there) */
    CHECK_EQ(statvfs("/dev/shm", &vfs), 0);
    if (vfs.f_blocks > 0) {
        uint64_t total = (uint64_t)vfs.f_blocks * vfs.f_frsize;
        size_t len = (size_t)((2 * total + (uint64_t)page) / (uint64_t)page *
                              (uint64_t)page);
        errno = 0;
        CHECK_EQ(hrdma_shm_create(full, len, (void **)&x), HRDMA_ERR_NOMEM);
        CHECK_EQ(errno, ENOSPC);
        CHECK(x == NULL);
        CHECK(!exists(full));
        CHECK_EQ(hrdma_shm_mapped_bytes(), start + 2 * LEN);
        OK("create larger than the tmpfs: NOMEM, the new file removed");
    } else {
        printf("# /dev/shm has no size limit: ENOSPC path not tried\n");
        OK("create larger than the tmpfs: skipped");
    }

    /* mmap failing after the file was made (no address space left, in a
     * child): the file is removed as well */
    {
        pid_t pid = fork();
        int status = 0;

        CHECK(pid >= 0);
        if (pid == 0) {
            struct rlimit rl = { 0, 0 };
            CHECK_EQ(getrlimit(RLIMIT_AS, &rl), 0);
            rl.rlim_cur = 0; /* every new mapping fails with ENOMEM */
            CHECK_EQ(setrlimit(RLIMIT_AS, &rl), 0);
            _exit(hrdma_shm_create(full, LEN, (void **)&x) == HRDMA_ERR_NOMEM &&
                  errno == ENOMEM && x == NULL && !exists(full) ? 0 : 1);
        }
        CHECK_EQ(waitpid(pid, &status, 0), pid);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        CHECK(!exists(full));
    }
    OK("create whose mmap fails: NOMEM, the new file removed");

    /* the name goes, the mappings stay */
    CHECK_EQ(unlink(seg), 0);
    CHECK_EQ(r[2], 69);
    w[2] = 0;
    CHECK_EQ(r[2], 0);
    CHECK_EQ(hrdma_shm_unmap(w, LEN), HRDMA_OK);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start + LEN);
    CHECK_EQ(r[3], 100);
    CHECK_EQ(hrdma_shm_unmap(r, LEN), HRDMA_OK);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start);
    CHECK_EQ(hrdma_shm_unmap(NULL, LEN), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_shm_mapped_bytes(), start);
    OK("mappings outlive the name; unmaps bring the counter back to its start");

    /* the counter from several threads at once */
    for (long i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_create(&threads[i], NULL, create_unmap_loop,
                                (void *)(intptr_t)i), 0);
    }
    for (int i = 0; i < THREADS; i++) {
        CHECK_EQ(pthread_join(threads[i], NULL), 0);
    }
    CHECK_EQ(hrdma_shm_mapped_bytes(), start);
    OK("creates and unmaps from 4 threads: the counter back to its start");

    CHECK(!exists(seg) && !exists(link_path) && !exists(full) && !exists(bad));
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
