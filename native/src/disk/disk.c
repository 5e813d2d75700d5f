/*
 * Block files: preallocation, trim, page-cache dropping, extent counting,
 * O_DIRECT, and an io_uring (liburing) for queued reads and writes.
 */
#include "hrdma_int.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <liburing.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

struct hrdma_disk_ring {
    struct io_uring ring;
    unsigned        depth;
    unsigned        inflight;
};

static int hrdma_disk_status(int err)
{
    switch (err) {
    case 0:
        return HRDMA_OK;
    case EINVAL:
    case EBADF:
    case ENOENT:
    case EISDIR:
        return HRDMA_ERR_INVALID;
    case ENOMEM:
        return HRDMA_ERR_NOMEM;
    case EOPNOTSUPP:
    case ENOSYS:
        return HRDMA_ERR_UNSUPPORTED;
    case EBUSY:
    case EAGAIN:
        return HRDMA_ERR_BUSY;
    default:
        return HRDMA_ERR_IO;
    }
}

int hrdma_disk_open(const char *path, int flags, int *fd_p)
{
    int oflags = O_CLOEXEC | ((flags & HRDMA_DISK_WRITE) ? O_RDWR : O_RDONLY);
    int fd;

    if (path == NULL || fd_p == NULL ||
        (flags & ~(HRDMA_DISK_WRITE | HRDMA_DISK_DIRECT)) != 0) {
        return HRDMA_ERR_INVALID;
    }
    if (flags & HRDMA_DISK_DIRECT) {
        oflags |= O_DIRECT;
    }
    fd = open(path, oflags);
    if (fd < 0) {
        /* tmpfs and some others refuse O_DIRECT with EINVAL */
        if ((flags & HRDMA_DISK_DIRECT) && errno == EINVAL) {
            return HRDMA_ERR_UNSUPPORTED;
        }
        return hrdma_disk_status(errno);
    }
    *fd_p = fd;
    return HRDMA_OK;
}

int hrdma_disk_close(int fd)
{
    return close(fd) == 0 ? HRDMA_OK : hrdma_disk_status(errno);
}

int hrdma_disk_preallocate(int fd, uint64_t offset, uint64_t len)
{
    if (len == 0 || offset > INT64_MAX || len > INT64_MAX - offset) {
        return HRDMA_ERR_INVALID;
    }
    if (fallocate(fd, FALLOC_FL_KEEP_SIZE, (off_t)offset, (off_t)len) != 0) {
        return hrdma_disk_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_disk_trim(int fd)
{
    struct stat st;

    if (fstat(fd, &st) != 0 || ftruncate(fd, st.st_size) != 0) {
        return hrdma_disk_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_disk_drop_cache(int fd, uint64_t offset, uint64_t len, int written)
{
    int err;

    if (offset > INT64_MAX || len > INT64_MAX - offset) {
        return HRDMA_ERR_INVALID;
    }
    if (written &&
        sync_file_range(fd, (off_t)offset, (off_t)len,
                        SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
                        SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
        return hrdma_disk_status(errno);
    }
    err = posix_fadvise(fd, (off_t)offset, (off_t)len, POSIX_FADV_DONTNEED);
    return hrdma_disk_status(err); /* returns the error, not errno */
}

int hrdma_disk_writeback(int fd, uint64_t offset, uint64_t len)
{
    if (offset > INT64_MAX || len > INT64_MAX - offset) {
        return HRDMA_ERR_INVALID;
    }
    if (sync_file_range(fd, (off_t)offset, (off_t)len, SYNC_FILE_RANGE_WRITE) != 0) {
        return hrdma_disk_status(errno);
    }
    return HRDMA_OK;
}

int hrdma_disk_extent_count(int fd, uint32_t *count_p)
{
    struct fiemap fm;

    if (count_p == NULL) {
        return HRDMA_ERR_INVALID;
    }
    /* fm_extent_count 0: the kernel only counts (fm_mapped_extents) */
    memset(&fm, 0, sizeof(fm));
    fm.fm_start = 0;
    fm.fm_length = FIEMAP_MAX_OFFSET;
    fm.fm_flags = FIEMAP_FLAG_SYNC;
    fm.fm_extent_count = 0;
    if (ioctl(fd, FS_IOC_FIEMAP, &fm) != 0) {
        return hrdma_disk_status(errno == ENOTTY ? EOPNOTSUPP : errno);
    }
    *count_p = fm.fm_mapped_extents;
    return HRDMA_OK;
}

int hrdma_disk_direct_alignment(int fd, uint32_t *align_p)
{
    struct stat st;

    if (align_p == NULL || fstat(fd, &st) != 0) {
        return align_p == NULL ? HRDMA_ERR_INVALID : hrdma_disk_status(errno);
    }
    /* the filesystem block size is a safe bound for the logical block size
     * O_DIRECT needs (statx STATX_DIOALIGN is newer than our kernels) */
    *align_p = st.st_blksize > 0 ? (uint32_t)st.st_blksize : 4096;
    return HRDMA_OK;
}

/* Pages asked of mincore at a time: a small vector on the stack, any range. */
#define HRDMA_RESIDENT_CHUNK_PAGES 4096u

/* cachestat(2), Linux 6.5; the C library's headers may predate it (the number is
 * the same on every architecture). */
#ifndef __NR_cachestat
#define __NR_cachestat 451
#endif
struct hrdma_cachestat_range {
    uint64_t off;
    uint64_t len;
};
struct hrdma_cachestat {
    uint64_t nr_cache;
    uint64_t nr_dirty;
    uint64_t nr_writeback;
    uint64_t nr_evicted;
    uint64_t nr_recently_evicted;
};

/* Bytes of [offset, end) in the page cache by mincore over a mapping of the
 * pages holding it: one lookup per page (about 2 ms for 128 MB here). */
static int hrdma_disk_resident_mincore(int fd, uint64_t offset, uint64_t end,
                                       uint64_t page, uint64_t *resident_p)
{
    unsigned char vec[HRDMA_RESIDENT_CHUNK_PAGES];
    uint64_t start = offset & ~(page - 1);
    uint64_t maplen = end - start, done, resident = 0;
    void *map;
    int err = 0;

    /* a mapping is only a window for mincore: nothing is faulted in */
    map = mmap(NULL, (size_t)maplen, PROT_READ, MAP_SHARED, fd, (off_t)start);
    if (map == MAP_FAILED) {
        return hrdma_disk_status(errno);
    }
    for (done = 0; done < maplen;) {
        uint64_t chunk = maplen - done;
        uint64_t pages;

        if (chunk > (uint64_t)HRDMA_RESIDENT_CHUNK_PAGES * page) {
            chunk = (uint64_t)HRDMA_RESIDENT_CHUNK_PAGES * page;
        }
        if (mincore((char *)map + done, (size_t)chunk, vec) != 0) {
            err = errno;
            break;
        }
        pages = (chunk + page - 1) / page;
        for (uint64_t i = 0; i < pages; i++) {
            if (vec[i] & 1) {
                /* the part of this page inside [offset, end) */
                uint64_t lo = start + done + i * page;
                uint64_t hi = lo + page;
                resident += (hi < end ? hi : end) - (lo > offset ? lo : offset);
            }
        }
        done += chunk;
    }
    munmap(map, (size_t)maplen);
    if (err != 0) {
        return hrdma_disk_status(err);
    }
    *resident_p = resident;
    return HRDMA_OK;
}

int hrdma_disk_resident(int fd, uint64_t offset, uint64_t len,
                        uint64_t *resident_p)
{
    struct stat st;
    struct hrdma_cachestat_range r;
    struct hrdma_cachestat cs;
    uint64_t page, end, first, last, edge;
    int rc;

    if (resident_p == NULL || offset > INT64_MAX || len > INT64_MAX - offset) {
        return HRDMA_ERR_INVALID;
    }
    if (fstat(fd, &st) != 0) {
        return hrdma_disk_status(errno);
    }
    if (!S_ISREG(st.st_mode)) {
        return HRDMA_ERR_INVALID;
    }
    end = offset + len;
    if (end > (uint64_t)st.st_size) {
        end = (uint64_t)st.st_size;
    }
    if (offset >= end) {
        *resident_p = 0;
        return HRDMA_OK;
    }
    page = (uint64_t)sysconf(_SC_PAGESIZE);
    first = (offset + page - 1) & ~(page - 1); /* the whole pages inside the range */
    last = end & ~(page - 1);
    if (first >= last) {
        return hrdma_disk_resident_mincore(fd, offset, end, page, resident_p);
    }
    /* the whole pages by cachestat: one walk of the file's page cache (about
     * 20 us for 128 MB here, 100x less than mincore's lookup per page) */
    memset(&cs, 0, sizeof(cs));
    r.off = first;
    r.len = last - first;
    if (syscall(__NR_cachestat, fd, &r, &cs, 0) != 0) {
        /* older kernels (ENOSYS), or refused: mincore does it all */
        return hrdma_disk_resident_mincore(fd, offset, end, page, resident_p);
    }
    *resident_p = cs.nr_cache * page;
    /* the partial pages at either end, if any, by mincore */
    if (offset < first) {
        rc = hrdma_disk_resident_mincore(fd, offset, first, page, &edge);
        if (rc != HRDMA_OK) {
            return rc;
        }
        *resident_p += edge;
    }
    if (last < end) {
        rc = hrdma_disk_resident_mincore(fd, last, end, page, &edge);
        if (rc != HRDMA_OK) {
            return rc;
        }
        *resident_p += edge;
    }
    return HRDMA_OK;
}

int hrdma_disk_ring_create(unsigned depth, hrdma_disk_ring_t **ring_p)
{
    hrdma_disk_ring_t *r;
    int ret;

    if (depth == 0 || depth > 4096 || ring_p == NULL) {
        return HRDMA_ERR_INVALID;
    }
    r = calloc(1, sizeof(*r));
    if (r == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    ret = io_uring_queue_init(depth, &r->ring, 0);
    if (ret < 0) {
        free(r);
        hrdma_log_error("io_uring_queue_init(%u): %s", depth, strerror(-ret));
        return hrdma_disk_status(-ret);
    }
    r->depth = depth;
    *ring_p = r;
    return HRDMA_OK;
}

int hrdma_disk_ring_destroy(hrdma_disk_ring_t *ring)
{
    if (ring == NULL) {
        return HRDMA_ERR_INVALID;
    }
    if (ring->inflight > 0) {
        return HRDMA_ERR_BUSY;
    }
    io_uring_queue_exit(&ring->ring);
    free(ring);
    return HRDMA_OK;
}

static int hrdma_disk_ring_post(hrdma_disk_ring_t *ring, int write, int fd,
                                void *buf, size_t len, uint64_t offset,
                                uint64_t cookie)
{
    struct io_uring_sqe *sqe;
    int ret;

    if (ring == NULL || buf == NULL || len == 0 || len > UINT32_MAX) {
        return HRDMA_ERR_INVALID;
    }
    if (ring->inflight >= ring->depth) {
        return HRDMA_ERR_BUSY;
    }
    sqe = io_uring_get_sqe(&ring->ring);
    if (sqe == NULL) {
        return HRDMA_ERR_BUSY;
    }
    if (write) {
        io_uring_prep_write(sqe, fd, buf, (unsigned)len, offset);
    } else {
        io_uring_prep_read(sqe, fd, buf, (unsigned)len, offset);
    }
    io_uring_sqe_set_data64(sqe, cookie);
    ret = io_uring_submit(&ring->ring);
    if (ret < 0) {
        return hrdma_disk_status(-ret);
    }
    ring->inflight++;
    return HRDMA_OK;
}

int hrdma_disk_ring_read(hrdma_disk_ring_t *ring, int fd, void *buf,
                         size_t len, uint64_t offset, uint64_t cookie)
{
    return hrdma_disk_ring_post(ring, 0, fd, buf, len, offset, cookie);
}

int hrdma_disk_ring_write(hrdma_disk_ring_t *ring, int fd, const void *buf,
                          size_t len, uint64_t offset, uint64_t cookie)
{
    /* io_uring does not write through the pointer */
    return hrdma_disk_ring_post(ring, 1, fd, (void *)(uintptr_t)buf, len,
                                offset, cookie);
}

int hrdma_disk_ring_reap(hrdma_disk_ring_t *ring, hrdma_disk_completion_t *out,
                         unsigned max, unsigned min_wait, unsigned *n_p)
{
    struct io_uring_cqe *cqe;
    unsigned n = 0;
    int ret;

    if (ring == NULL || out == NULL || n_p == NULL || min_wait > max ||
        min_wait > ring->inflight) {
        return HRDMA_ERR_INVALID;
    }
    while (n < max) {
        if (n < min_wait) {
            ret = io_uring_wait_cqe(&ring->ring, &cqe);
        } else {
            ret = io_uring_peek_cqe(&ring->ring, &cqe);
            if (ret == -EAGAIN) {
                break;
            }
        }
        if (ret == -EINTR) {
            continue;
        }
        if (ret < 0) {
            *n_p = n;
            return hrdma_disk_status(-ret);
        }
        out[n].cookie = io_uring_cqe_get_data64(cqe);
        out[n].result = cqe->res >= 0 ? (int64_t)cqe->res
                                      : (int64_t)hrdma_disk_status(-cqe->res);
        io_uring_cqe_seen(&ring->ring, cqe);
        ring->inflight--;
        n++;
    }
    *n_p = n;
    return HRDMA_OK;
}

unsigned hrdma_disk_ring_inflight(const hrdma_disk_ring_t *ring)
{
    return ring->inflight;
}
