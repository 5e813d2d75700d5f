#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FILE_BYTES (3 * 4096 + 100)

static char path[128];

static void remove_file(void)
{
    unlink(path);
}

int main(void)
{
    unsigned char data[FILE_BYTES];
    const void *addr, *a;
    uint64_t size;
    int fd, pipefd[2];

    snprintf(path, sizeof(path), "/tmp/hrdma_test_fdmap.%ld", (long)getpid());
    atexit(remove_file);
    for (int i = 0; i < FILE_BYTES; i++) {
        data[i] = (unsigned char)(i * 7 + 3);
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, data, sizeof(data)), (long long)sizeof(data));
    close(fd);

    /* a read-only descriptor, as the DataNode sends */
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);
    CHECK_EQ(hrdma_fd_adopt(fd, &size), HRDMA_OK);
    CHECK_EQ(size, FILE_BYTES);
    CHECK_EQ(hrdma_fds_held(), 1);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    OK("adopt a regular file: size, counted, close-on-exec");

    /* an unaligned range that crosses pages, up to the file's last byte */
    CHECK_EQ(hrdma_fd_map(fd, 4000, FILE_BYTES - 4000, &a), HRDMA_OK);
    CHECK(memcmp(a, data + 4000, FILE_BYTES - 4000) == 0);
    CHECK_EQ(hrdma_fd_mapped_bytes(), FILE_BYTES); /* from the first page's start */
    OK("map an unaligned range: the file's bytes, whole pages counted");

    /* read-ahead asked for an unaligned part of the mapping: taken, the bytes unchanged */
    CHECK_EQ(hrdma_fd_advise_willneed(a + 100, FILE_BYTES - 4100), HRDMA_OK);
    CHECK_EQ(hrdma_fd_advise_willneed(a, 0), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_advise_willneed(NULL, 10), HRDMA_ERR_INVALID);
    CHECK(memcmp(a, data + 4000, FILE_BYTES - 4000) == 0);
    OK("willneed on a mapped range");

    /* past the end, empty, bad descriptor: refused, nothing mapped */
    CHECK_EQ(hrdma_fd_map(fd, 4000, FILE_BYTES - 3999, &addr), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_map(fd, 0, 0, &addr), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_map(fd, UINT64_MAX - 10, 100, &addr), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_map(-1, 0, 10, &addr), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_mapped_bytes(), FILE_BYTES);
    OK("ranges past the end, empty or overflowing are refused");

    /* the mapping outlives the descriptor */
    CHECK_EQ(hrdma_fd_map(fd, 0, 10, &addr), HRDMA_OK);
    CHECK_EQ(hrdma_fd_close(fd), HRDMA_OK);
    CHECK_EQ(hrdma_fds_held(), 0);
    CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);
    CHECK(memcmp(addr, data, 10) == 0);
    CHECK_EQ(hrdma_fd_unmap(addr, 10), HRDMA_OK);
    OK("close: the descriptor goes, the mapping stays");

    fd = open(path, O_RDONLY);
    CHECK_EQ(hrdma_fd_adopt(fd, &size), HRDMA_OK);
    CHECK_EQ(hrdma_fd_map(fd, 4096, 4096, &addr), HRDMA_OK);
    CHECK(((uintptr_t)addr % 4096) == 0);
    CHECK_EQ(hrdma_fd_close(fd), HRDMA_OK);
    CHECK_EQ(hrdma_fd_mapped_bytes(), FILE_BYTES + 4096);
    CHECK_EQ(hrdma_fd_advise_random(addr, 4096), HRDMA_OK);
    CHECK(memcmp(addr, data + 4096, 4096) == 0);
    CHECK_EQ(hrdma_fd_advise_random(NULL, 4096), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_advise_random(addr, 0), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_advise_willneed((const unsigned char *)addr + 100, 4096 - 100), HRDMA_OK);
    CHECK(memcmp(addr, data + 4096, 4096) == 0);
    CHECK_EQ(hrdma_fd_advise_willneed(NULL, 10), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_unmap(addr, 4096), HRDMA_OK);
    OK("an aligned range");

    /* the first mapping, still there after its descriptor went, by its addr and len; advised
     * random from an unaligned start (the advice covers its first page) */
    CHECK_EQ(hrdma_fd_advise_random(a, FILE_BYTES - 4000), HRDMA_OK);
    CHECK(memcmp(a, data + 4000, FILE_BYTES - 4000) == 0);
    CHECK_EQ(hrdma_fd_unmap(a, FILE_BYTES - 4000), HRDMA_OK);
    CHECK_EQ(hrdma_fd_mapped_bytes(), 0);
    OK("unmap an unaligned range by its addr and len: nothing left mapped");

    /* pread: whole, short where the file ends, and only short once it is truncated under the
     * reader (a mapping of the lost pages would fault) */
    {
        unsigned char got[FILE_BYTES];
        size_t done = 0;
        int wfd = open(path, O_RDWR);

        CHECK(wfd >= 0);
        fd = open(path, O_RDONLY);
        CHECK(fd >= 0);
        CHECK_EQ(hrdma_fd_adopt(fd, &size), HRDMA_OK);
        CHECK_EQ(hrdma_fd_pread(fd, got, FILE_BYTES, 0, &done), HRDMA_OK);
        CHECK_EQ(done, FILE_BYTES);
        CHECK(memcmp(got, data, FILE_BYTES) == 0);
        CHECK_EQ(hrdma_fd_pread(fd, got, 4096, FILE_BYTES - 100, &done), HRDMA_OK);
        CHECK_EQ(done, 100);
        CHECK(memcmp(got, data + FILE_BYTES - 100, 100) == 0);
        CHECK_EQ(hrdma_fd_fadvise_willneed(fd, 0, FILE_BYTES), HRDMA_OK);
        CHECK_EQ(ftruncate(wfd, 4096), 0);
        CHECK_EQ(hrdma_fd_pread(fd, got, 8192, 0, &done), HRDMA_OK);
        CHECK_EQ(done, 4096);
        CHECK_EQ(hrdma_fd_pread(fd, got, 100, 8192, &done), HRDMA_OK);
        CHECK_EQ(done, 0);
        CHECK_EQ(hrdma_fd_pread(fd, NULL, 10, 0, &done), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_fd_pread(-1, got, 10, 0, &done), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_fd_close(fd), HRDMA_OK);
        /* the file as it was, for the checks below */
        CHECK_EQ(pwrite(wfd, data, sizeof(data), 0), (long long)sizeof(data));
        close(wfd);
    }
    OK("pread: whole, short at the end, short after a truncate");

    /* the DataNode's side: read-only, close-on-exec, regular files only, not counted */
    CHECK_EQ(hrdma_fd_open_read(path, &fd), HRDMA_OK);
    CHECK_EQ(fcntl(fd, F_GETFL) & O_ACCMODE, O_RDONLY);
    CHECK(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    CHECK_EQ(hrdma_fds_held(), 0);
    {
        struct stat st;
        CHECK_EQ(fstat(fd, &st), 0);
        CHECK_EQ(st.st_size, FILE_BYTES); /* never truncated */
    }
    close(fd);
    CHECK_EQ(hrdma_fd_open_read("/tmp", &fd), HRDMA_ERR_INVALID);
    CHECK(hrdma_fd_open_read("/nonexistent/hrdma", &fd) < 0);
    OK("open a file to pass: read-only, intact, directories refused");

    /* not a regular file: refused and closed, not counted */
    CHECK_EQ(pipe(pipefd), 0);
    CHECK_EQ(hrdma_fd_adopt(pipefd[0], &size), HRDMA_ERR_INVALID);
    CHECK(fcntl(pipefd[0], F_GETFD) < 0 && errno == EBADF);
    CHECK_EQ(hrdma_fds_held(), 0);
    close(pipefd[1]);
    CHECK_EQ(hrdma_fd_adopt(-1, &size), HRDMA_ERR_INVALID);
    OK("a pipe is refused and closed");

    /* a sealed segment (the receiving DataNode's) mapped read-write through its
     * descriptor (the sender's): stores on one side are read on the other */
    {
        void *seg, *mine;
        int sfd;
        long page = sysconf(_SC_PAGESIZE);

        CHECK_EQ(hrdma_shm_create_sealed(0, &seg, &sfd), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_shm_create_sealed((size_t)page + 1, &seg, &sfd), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_shm_create_sealed(4 * (size_t)page, &seg, &sfd), HRDMA_OK);
        CHECK_EQ(hrdma_shm_mapped_bytes(), 4 * (uint64_t)page);
        CHECK(fcntl(sfd, F_GETFD) & FD_CLOEXEC);
        /* the peer cannot shrink or grow it, nor lift the seals */
        CHECK(ftruncate(sfd, 0) != 0 && errno == EPERM);
        CHECK(ftruncate(sfd, 8 * page) != 0 && errno == EPERM);
        CHECK(fcntl(sfd, F_ADD_SEALS, F_SEAL_WRITE) != 0 && errno == EPERM);
        CHECK_EQ(hrdma_fd_adopt(sfd, &size), HRDMA_OK);
        CHECK_EQ(size, 4 * (uint64_t)page);
        CHECK_EQ(hrdma_fd_map_shared(sfd, 8 * (size_t)page, &mine), HRDMA_ERR_INVALID); /* past its end */
        CHECK_EQ(hrdma_fd_map_shared(sfd, 4 * (size_t)page, &mine), HRDMA_OK);
        CHECK_EQ(hrdma_fd_mapped_bytes(), 4 * (uint64_t)page);
        CHECK_EQ(hrdma_fd_close(sfd), HRDMA_OK); /* the mappings outlive it */
        memset((unsigned char *)mine + page, 0xa5, 100);
        CHECK(((unsigned char *)seg)[page + 99] == 0xa5);
        /* the creator frees the memory before it unmaps: the peer's mapping reads zeros */
        CHECK_EQ(hrdma_shm_discard(seg, 4 * (size_t)page), HRDMA_OK);
        CHECK(((unsigned char *)mine)[page + 99] == 0);
        CHECK_EQ(hrdma_shm_discard(NULL, 1), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_fd_unmap(mine, 4 * (size_t)page), HRDMA_OK);
        CHECK_EQ(hrdma_shm_unmap(seg, 4 * (size_t)page), HRDMA_OK);
        CHECK_EQ(hrdma_fd_mapped_bytes(), 0);
        CHECK_EQ(hrdma_shm_mapped_bytes(), 0);
        CHECK_EQ(hrdma_fds_held(), 0);
        OK("a sealed segment: mapped read-write by its descriptor, not resizable, counts back to 0");

        /* a file without the shrink seal is refused: its creator could truncate it under us */
        fd = open(path, O_RDWR);
        CHECK(fd >= 0);
        CHECK_EQ(hrdma_fd_adopt(fd, &size), HRDMA_OK);
        CHECK_EQ(hrdma_fd_map_shared(fd, (size_t)page, &mine), HRDMA_ERR_INVALID);
        CHECK_EQ(hrdma_fd_mapped_bytes(), 0);
        CHECK_EQ(hrdma_fd_close(fd), HRDMA_OK);
        OK("an unsealed file is refused for a read-write mapping");
    }
    return 0;
}
