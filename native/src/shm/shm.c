/*
 * Shared-memory segments for same-host reads: files in a tmpfs (/dev/shm)
 * that the DataNode creates and fills, and a client maps read-only.
 */
#include "hrdma_int.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Bytes mapped by create and open, minus those unmapped. */
static atomic_uint_fast64_t hrdma_shm_bytes;

static int hrdma_shm_status(int err)
{
    switch (err) {
    case EEXIST:
        return HRDMA_ERR_BUSY;
    case ENOSPC:
    case ENOMEM:
        return HRDMA_ERR_NOMEM;
    case EINVAL:
        return HRDMA_ERR_INVALID;
    default:
        return HRDMA_ERR_IO;
    }
}

/* The length checks create and open share: mappings count whole pages, and
 * the length must fit an off_t. Sets errno as a failing call would. */
static int hrdma_shm_check_args(const char *path, size_t len, void **addr_p)
{
    long page = sysconf(_SC_PAGESIZE);

    if (path == NULL || addr_p == NULL || len == 0 || len > INT64_MAX ||
        page <= 0 || len % (size_t)page != 0) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    return HRDMA_OK;
}

int hrdma_shm_create(const char *path, size_t len, void **addr_p)
{
    void *addr = NULL;
    int fd, err, st;

    st = hrdma_shm_check_args(path, len, addr_p);
    if (st < 0) {
        return st;
    }
    fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        return hrdma_shm_status(errno);
    }
    /* Mode 0 also sets the size. Reserving every page now turns a full tmpfs
     * into ENOSPC here instead of SIGBUS at a later store; tmpfs gives up
     * with EINTR when a signal arrives (the JVM sends some), undoing what it
     * had reserved, so try again. */
    do {
        err = fallocate(fd, 0, 0, (off_t)len) == 0 ? 0 : errno;
    } while (err == EINTR);
    if (err == 0) {
        addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = addr == MAP_FAILED ? errno : 0;
    }
    close(fd); /* the mapping keeps the file */
    if (err != 0) {
        unlink(path); /* created above (O_EXCL) */
        errno = err;  /* for the caller's message, past close and unlink */
        return hrdma_shm_status(err);
    }
    atomic_fetch_add(&hrdma_shm_bytes, (uint_fast64_t)len);
    *addr_p = addr;
    return HRDMA_OK;
}

int hrdma_shm_open(const char *path, size_t len, void **addr_p)
{
    struct stat st;
    void *addr = NULL;
    int fd, err, ret;

    ret = hrdma_shm_check_args(path, len, addr_p);
    if (ret < 0) {
        return ret;
    }
    /* O_NONBLOCK: a FIFO planted at the path must not block the open; it
     * changes nothing for the regular file that is mapped. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) {
        return hrdma_shm_status(errno);
    }
    if (fstat(fd, &st) != 0) {
        err = errno;
    } else if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size < len) {
        /* mapping past the end would fault (SIGBUS) on first touch */
        err = EINVAL;
    } else {
        addr = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
        err = addr == MAP_FAILED ? errno : 0;
    }
    close(fd);
    if (err != 0) {
        errno = err;
        return hrdma_shm_status(err);
    }
    atomic_fetch_add(&hrdma_shm_bytes, (uint_fast64_t)len);
    *addr_p = addr;
    return HRDMA_OK;
}

int hrdma_shm_create_sealed(size_t len, void **addr_p, int *fd_p)
{
    long page = sysconf(_SC_PAGESIZE);
    void *addr = NULL;
    int fd, err;

    if (addr_p == NULL || fd_p == NULL || len == 0 || len > INT64_MAX ||
        page <= 0 || len % (size_t)page != 0) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    fd = memfd_create("hrdma-write", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    if (fd < 0) {
        return hrdma_shm_status(errno);
    }
    do { /* as in create: a full memory is a refusal now, EINTR is retried */
        err = fallocate(fd, 0, 0, (off_t)len) == 0 ? 0 : errno;
    } while (err == EINTR);
    if (err == 0 && fcntl(fd, F_ADD_SEALS,
                          F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
        err = errno;
    }
    if (err == 0) {
        addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
        err = addr == MAP_FAILED ? errno : 0;
    }
    if (err != 0) {
        close(fd);
        errno = err;
        return hrdma_shm_status(err);
    }
    atomic_fetch_add(&hrdma_shm_bytes, (uint_fast64_t)len);
    *addr_p = addr;
    *fd_p = fd;
    return HRDMA_OK;
}

int hrdma_shm_discard(void *addr, size_t len)
{
    if (addr == NULL || len == 0) {
        return HRDMA_ERR_INVALID;
    }
    if (madvise(addr, len, MADV_REMOVE) != 0) {
        return hrdma_shm_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_shm_unmap(void *addr, size_t len)
{
    if (addr == NULL || len == 0) {
        return HRDMA_ERR_INVALID;
    }
    if (munmap(addr, len) != 0) {
        return hrdma_shm_status(errno);
    }
    atomic_fetch_sub(&hrdma_shm_bytes, (uint_fast64_t)len);
    return HRDMA_OK;
}

uint64_t hrdma_shm_mapped_bytes(void)
{
    return (uint64_t)atomic_load(&hrdma_shm_bytes);
}
