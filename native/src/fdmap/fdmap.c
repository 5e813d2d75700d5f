/*
 * Files received from another process (short-circuit reads): a client gets
 * open descriptors of a replica's block and .meta files from the DataNode
 * over a Unix domain socket (SCM_RIGHTS), hands them over here, maps ranges
 * of them read-only and closes them. Descriptors held and bytes mapped are
 * counted process-wide, so leaks show.
 */
#include "hrdma_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

static atomic_uint_fast64_t hrdma_fd_bytes;
static atomic_uint_fast64_t hrdma_fd_held;

static int hrdma_fd_status(int err)
{
    switch (err) {
    case ENOMEM:
        return HRDMA_ERR_NOMEM;
    case EINVAL:
    case EBADF:
        return HRDMA_ERR_INVALID;
    default:
        return HRDMA_ERR_IO;
    }
}

/* The size of the regular file open at fd; EINVAL for anything else. */
static int hrdma_fd_regular_size(int fd, uint64_t *size_p)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        return hrdma_fd_status(errno);
    }
    if (!S_ISREG(st.st_mode) || st.st_size < 0) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    *size_p = (uint64_t)st.st_size;
    return HRDMA_OK;
}

int hrdma_fd_open_read(const char *path, int *fd_p)
{
    uint64_t size;
    int fd, st;

    if (path == NULL || fd_p == NULL) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    /* O_NONBLOCK: a FIFO planted at the path must not block the open */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        return hrdma_fd_status(errno);
    }
    st = hrdma_fd_regular_size(fd, &size);
    if (st < 0) {
        int err = errno;
        close(fd);
        errno = err;
        return st;
    }
    *fd_p = fd;
    return HRDMA_OK;
}

int hrdma_fd_adopt(int fd, uint64_t *size_p)
{
    int st;

    if (fd < 0 || size_p == NULL) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_fd_regular_size(fd, size_p);
    if (st < 0) {
        int err = errno;
        close(fd); /* ours either way: nothing else will close it */
        errno = err;
        return st;
    }
    /* received descriptors come without FD_CLOEXEC: a child must not keep them */
    (void)fcntl(fd, F_SETFD, FD_CLOEXEC);
    atomic_fetch_add(&hrdma_fd_held, 1);
    return HRDMA_OK;
}

int hrdma_fd_close(int fd)
{
    if (fd < 0) {
        return HRDMA_ERR_INVALID;
    }
    atomic_fetch_sub(&hrdma_fd_held, 1);
    /* Linux frees the descriptor even when close fails (EINTR, EIO): never retry */
    if (close(fd) != 0 && errno != EINTR) {
        return hrdma_fd_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_fd_map(int fd, uint64_t offset, size_t len, const void **addr_p)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t size, delta;
    void *base;
    int st;

    if (fd < 0 || addr_p == NULL || len == 0 || page <= 0 ||
        offset > INT64_MAX || len > INT64_MAX - offset) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_fd_regular_size(fd, &size);
    if (st < 0) {
        return st;
    }
    if (offset + len > size) {
        /* a page past the end faults with SIGBUS on first touch */
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    delta = offset % (uint64_t)page;
    base = mmap(NULL, len + delta, PROT_READ, MAP_SHARED, fd,
                (off_t)(offset - delta));
    if (base == MAP_FAILED) {
        return hrdma_fd_status(errno);
    }
    atomic_fetch_add(&hrdma_fd_bytes, (uint_fast64_t)(len + delta));
    *addr_p = (const unsigned char *)base + delta;
    return HRDMA_OK;
}

int hrdma_fd_map_shared(int fd, size_t len, void **addr_p)
{
    long page = sysconf(_SC_PAGESIZE);
    uint64_t size;
    void *base;
    int st, seals;

    if (fd < 0 || addr_p == NULL || len == 0 || page <= 0 ||
        len > INT64_MAX || len % (size_t)page != 0) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_fd_regular_size(fd, &size);
    if (st < 0) {
        return st;
    }
    seals = fcntl(fd, F_GET_SEALS);
    if (size < len || seals < 0 || (seals & F_SEAL_SHRINK) == 0) {
        /* a file its creator may still truncate would fault our stores */
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (base == MAP_FAILED) {
        return hrdma_fd_status(errno);
    }
    atomic_fetch_add(&hrdma_fd_bytes, (uint_fast64_t)len);
    *addr_p = base;
    return HRDMA_OK;
}

int hrdma_fd_unmap(const void *addr, size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, delta;

    if (addr == NULL || len == 0 || page <= 0) {
        return HRDMA_ERR_INVALID;
    }
    delta = a % (uintptr_t)page;
    if (munmap((void *)(a - delta), len + delta) != 0) {
        return hrdma_fd_status(errno);
    }
    atomic_fetch_sub(&hrdma_fd_bytes, (uint_fast64_t)(len + delta));
    return HRDMA_OK;
}

static int hrdma_fd_advise(const void *addr, size_t len, int advice)
{
    long page = sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)addr, delta;

    if (addr == NULL || len == 0 || page <= 0) {
        return HRDMA_ERR_INVALID;
    }
    delta = a % (uintptr_t)page;
    if (madvise((void *)(a - delta), len + delta, advice) != 0) {
        return hrdma_fd_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_fd_advise_random(const void *addr, size_t len)
{
    return hrdma_fd_advise(addr, len, MADV_RANDOM);
}

int hrdma_fd_advise_willneed(const void *addr, size_t len)
{
    return hrdma_fd_advise(addr, len, MADV_WILLNEED);
}

int hrdma_fd_pread(int fd, void *buf, size_t len, uint64_t offset, size_t *done_p)
{
    size_t done = 0;

    if (fd < 0 || (buf == NULL && len > 0) || done_p == NULL ||
        offset > INT64_MAX || len > INT64_MAX - offset) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    while (done < len) {
        ssize_t n = pread(fd, (unsigned char *)buf + done, len - done,
                          (off_t)(offset + done));
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return hrdma_fd_status(errno);
        }
        if (n == 0) {
            break; /* the file ends here: the caller sees a short count */
        }
        done += (size_t)n;
    }
    *done_p = done;
    return HRDMA_OK;
}

int hrdma_fd_pread_verify(int fd, void *buf, size_t len, uint64_t offset,
                          int nowait, uint32_t bpc, const void *sums,
                          size_t sums_len, size_t *done_p, size_t *bad_p)
{
    size_t done = 0, checked;
    int st;

    if (fd < 0 || (buf == NULL && len > 0) || done_p == NULL ||
        offset > INT64_MAX || len > INT64_MAX - offset ||
        (sums != NULL && bpc == 0)) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    while (done < len) {
        struct iovec iov;
        ssize_t n;

        iov.iov_base = (unsigned char *)buf + done;
        iov.iov_len = len - done;
        n = preadv2(fd, &iov, 1, (off_t)(offset + done), nowait ? RWF_NOWAIT : 0);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            if (nowait && (errno == EAGAIN || errno == EOPNOTSUPP)) {
                break; /* not in the page cache (or cannot tell): a short count */
            }
            return hrdma_fd_status(errno);
        }
        if (n == 0) {
            break; /* the file ends here */
        }
        done += (size_t)n;
    }
    *done_p = done;
    if (sums == NULL) {
        return HRDMA_OK;
    }
    /* the whole range, its last chunk possibly short; else the whole chunks read */
    checked = done == len ? len : done / bpc * bpc;
    if (checked == 0) {
        return HRDMA_OK;
    }
    if (sums_len < (checked + bpc - 1) / bpc * 4) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_crc32c_chunks_verify(buf, checked, bpc, sums,
                                    (checked + bpc - 1) / bpc * 4, bad_p);
    return st;
}

int hrdma_fd_fadvise_willneed(int fd, uint64_t offset, uint64_t len)
{
    int err;

    if (fd < 0 || offset > INT64_MAX || len > INT64_MAX) {
        return HRDMA_ERR_INVALID;
    }
    err = posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_WILLNEED);
    return err == 0 ? HRDMA_OK : hrdma_fd_status(err);
}

uint64_t hrdma_fd_mapped_bytes(void)
{
    return (uint64_t)atomic_load(&hrdma_fd_bytes);
}

uint64_t hrdma_fds_held(void)
{
    return (uint64_t)atomic_load(&hrdma_fd_held);
}
