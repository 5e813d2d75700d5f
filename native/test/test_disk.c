#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MB (1024u * 1024u)

static int make_file(char *path)
{
    int fd;
    strcpy(path, "./test_disk.XXXXXX"); /* the build directory: a real filesystem */
    fd = mkstemp(path);
    CHECK(fd >= 0);
    return fd;
}

static void fill(unsigned char *p, size_t len, uint64_t offset)
{
    for (size_t i = 0; i < len; i++) {
        p[i] = (unsigned char)((offset + i) * 31 + 7);
    }
}

int main(void)
{
    char a_path[64], b_path[64];
    int a_raw = make_file(a_path), b_raw = make_file(b_path);
    int a, b, d, st;
    struct stat sa;
    uint32_t extents_a = 0, extents_b = 0, align = 0;
    static unsigned char chunk[64 * 1024];
    hrdma_ctx_t *ctx;
    hrdma_mem_t *mem;
    hrdma_ctx_stats_t cs;
    hrdma_disk_ring_t *ring;
    hrdma_disk_completion_t done[8];
    unsigned n = 0, got = 0;
    uint64_t res = 1;

    close(a_raw);
    close(b_raw);
    CHECK_EQ(hrdma_disk_open(a_path, HRDMA_DISK_WRITE, &a), HRDMA_OK);
    CHECK_EQ(hrdma_disk_open(b_path, HRDMA_DISK_WRITE, &b), HRDMA_OK);
    CHECK_EQ(hrdma_disk_open("./no/such/file", 0, &d), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_disk_open(a_path, 0x100, &d), HRDMA_ERR_INVALID);
    OK("open, bad paths and flags refused");

    /* preallocate 16 MB each: the length (the stock DataNode's view) stays 0 */
    CHECK_EQ(hrdma_disk_preallocate(a, 0, 16 * MB), HRDMA_OK);
    CHECK_EQ(hrdma_disk_preallocate(b, 0, 16 * MB), HRDMA_OK);
    CHECK_EQ(hrdma_disk_preallocate(a, 0, 0), HRDMA_ERR_INVALID);
    CHECK_EQ(fstat(a, &sa), 0);
    CHECK_EQ(sa.st_size, 0);
    CHECK((uint64_t)sa.st_blocks * 512 >= 16 * MB);
    OK("preallocate keeps the size, reserves the blocks");

    /* two streams interleaved in 64 KB writes, 8 MB each */
    for (uint64_t off = 0; off < 8 * MB; off += sizeof(chunk)) {
        fill(chunk, sizeof(chunk), off);
        CHECK_EQ(pwrite(a, chunk, sizeof(chunk), (off_t)off), (ssize_t)sizeof(chunk));
        CHECK_EQ(pwrite(b, chunk, sizeof(chunk), (off_t)off), (ssize_t)sizeof(chunk));
    }
    CHECK_EQ(hrdma_disk_writeback(a, 0, 4 * MB), HRDMA_OK);
    CHECK_EQ(hrdma_disk_drop_cache(a, 0, 8 * MB, 1), HRDMA_OK);
    CHECK_EQ(hrdma_disk_drop_cache(b, 0, 8 * MB, 1), HRDMA_OK);
    CHECK_EQ(hrdma_disk_trim(a), HRDMA_OK);
    CHECK_EQ(hrdma_disk_trim(b), HRDMA_OK);
    CHECK_EQ(fstat(a, &sa), 0);
    CHECK_EQ(sa.st_size, 8 * MB);
    CHECK((uint64_t)sa.st_blocks * 512 <= 8 * MB + 64 * 1024);
    CHECK_EQ(hrdma_disk_extent_count(a, &extents_a), HRDMA_OK);
    CHECK_EQ(hrdma_disk_extent_count(b, &extents_b), HRDMA_OK);
    printf("# interleaved preallocated files: %u and %u extents\n", extents_a, extents_b);
    CHECK(extents_a >= 1 && extents_a <= 2);
    CHECK(extents_b >= 1 && extents_b <= 2);
    OK("interleaved writes into preallocated files: few extents; trim releases the tail");

    /* page-cache residency: a was written back and dropped above */
    CHECK_EQ(hrdma_disk_resident(a, 0, 8 * MB, &res), HRDMA_OK);
    CHECK_EQ(res, 0);
    CHECK_EQ(posix_fadvise(a, 0, 0, POSIX_FADV_RANDOM), 0); /* no read-ahead around the reads */
    CHECK_EQ(pread(a, chunk, 3 * 4096, 2 * 4096), 3 * 4096);
    CHECK_EQ(hrdma_disk_resident(a, 0, 8 * MB, &res), HRDMA_OK);
    CHECK_EQ(res, 3 * 4096);
    CHECK_EQ(hrdma_disk_resident(a, 2 * 4096 + 100, 5000, &res), HRDMA_OK);
    CHECK_EQ(res, 5000);
    CHECK_EQ(hrdma_disk_resident(a, 4 * 4096 + 4000, 4096, &res), HRDMA_OK);
    CHECK_EQ(res, 96); /* the rest of the last page read; the next page is not */
    /* whole pages inside (3, 4: resident) and partial ones at both ends (2: resident, 5: not) */
    CHECK_EQ(hrdma_disk_resident(a, 2 * 4096 + 100, 3 * 4096 - 50, &res), HRDMA_OK);
    CHECK_EQ(res, 2 * 4096 + 3996);
    CHECK_EQ(hrdma_disk_resident(a, 8 * MB - 10, 100, &res), HRDMA_OK);
    CHECK_EQ(res, 0);
    CHECK_EQ(hrdma_disk_resident(a, 9 * MB, 100, &res), HRDMA_OK);
    CHECK_EQ(res, 0);
    /* a range longer than one mincore vector: 24 MB, a page read at 20 MB */
    CHECK_EQ(ftruncate(a, 24 * MB), 0);
    CHECK_EQ(pread(a, chunk, 4096, 20 * MB), 4096);
    CHECK_EQ(hrdma_disk_resident(a, 0, 24 * MB, &res), HRDMA_OK);
    CHECK_EQ(res, 4 * 4096);
    CHECK_EQ(hrdma_disk_resident(a, 4096, 24 * MB, &res), HRDMA_OK);
    CHECK_EQ(res, 4 * 4096);
    CHECK_EQ(ftruncate(a, 8 * MB), 0);
    CHECK_EQ(hrdma_disk_resident(-1, 0, 4096, &res), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_disk_resident(a, 0, 4096, NULL), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_disk_resident(a, 1, UINT64_MAX, &res), HRDMA_ERR_INVALID);
    OK("residency: the bytes of a range in the page cache, cut at the end of the file");

    /* O_DIRECT reads through the ring into registered memory, 4 in flight */
    st = hrdma_disk_open(a_path, HRDMA_DISK_DIRECT, &d);
    CHECK_EQ(st, HRDMA_OK);
    CHECK_EQ(hrdma_disk_direct_alignment(d, &align), HRDMA_OK);
    CHECK(align >= 512 && MB % align == 0);
    CHECK_EQ(hrdma_ctx_create("TLS=tcp", &ctx), HRDMA_OK);
    CHECK_EQ(hrdma_mem_map(ctx, 4 * MB, &mem), HRDMA_OK);
    CHECK_EQ((uintptr_t)hrdma_mem_address(mem) % align, 0);
    CHECK_EQ(hrdma_disk_ring_create(4, &ring), HRDMA_OK);
    for (unsigned i = 0; i < 4; i++) {
        CHECK_EQ(hrdma_disk_ring_read(ring, d, (char *)hrdma_mem_address(mem) + i * MB,
                                      MB, (uint64_t)(3 - i) * MB, 100 + i), HRDMA_OK);
    }
    CHECK_EQ(hrdma_disk_ring_inflight(ring), 4);
    CHECK_EQ(hrdma_disk_ring_read(ring, d, hrdma_mem_address(mem), MB, 0, 9),
             HRDMA_ERR_BUSY);
    CHECK_EQ(hrdma_disk_ring_destroy(ring), HRDMA_ERR_BUSY);
    while (got < 4) {
        CHECK_EQ(hrdma_disk_ring_reap(ring, done, 8, 1, &n), HRDMA_OK);
        for (unsigned i = 0; i < n; i++) {
            unsigned k = (unsigned)(done[i].cookie - 100);
            unsigned char *p = (unsigned char *)hrdma_mem_address(mem) + k * MB;
            static unsigned char want[MB];
            CHECK(k < 4);
            CHECK_EQ(done[i].result, MB);
            fill(want, MB, (uint64_t)(3 - k) * MB);
            CHECK(memcmp(p, want, MB) == 0);
        }
        got += n;
    }
    CHECK_EQ(hrdma_disk_ring_inflight(ring), 0);
    OK("O_DIRECT reads through io_uring into registered memory, 4 in flight");

    /* O_DIRECT write through the ring, read back; a misaligned read fails */
    CHECK_EQ(hrdma_disk_close(d), HRDMA_OK);
    CHECK_EQ(hrdma_disk_open(b_path, HRDMA_DISK_WRITE | HRDMA_DISK_DIRECT, &d), HRDMA_OK);
    memset(hrdma_mem_address(mem), 0xAB, MB);
    CHECK_EQ(hrdma_disk_ring_write(ring, d, hrdma_mem_address(mem), MB, 8 * MB, 1), HRDMA_OK);
    CHECK_EQ(hrdma_disk_ring_reap(ring, done, 8, 1, &n), HRDMA_OK);
    CHECK_EQ(n, 1);
    CHECK_EQ(done[0].result, MB);
    CHECK_EQ(pread(b, chunk, sizeof(chunk), 8 * MB + 4096), (ssize_t)sizeof(chunk));
    CHECK(chunk[0] == 0xAB && chunk[sizeof(chunk) - 1] == 0xAB);
    CHECK_EQ(hrdma_disk_ring_read(ring, d, (char *)hrdma_mem_address(mem) + 1, 4096, 0, 2),
             HRDMA_OK);
    CHECK_EQ(hrdma_disk_ring_reap(ring, done, 8, 1, &n), HRDMA_OK);
    CHECK_EQ(n, 1);
    CHECK_EQ(done[0].result, HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_disk_ring_reap(ring, done, 8, 1, &n), HRDMA_ERR_INVALID);
    OK("O_DIRECT write through io_uring; misaligned request reported per request");

    CHECK_EQ(hrdma_disk_ring_destroy(ring), HRDMA_OK);
    CHECK_EQ(hrdma_disk_ring_create(0, &ring), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_mem_unmap(mem), HRDMA_OK);
    hrdma_ctx_stats(ctx, &cs);
    CHECK_EQ(cs.regions, 0);
    CHECK_EQ(cs.bytes_registered, 0);
    CHECK_EQ(hrdma_ctx_destroy(ctx), HRDMA_OK);
    CHECK_EQ(hrdma_disk_close(d), HRDMA_OK);
    CHECK_EQ(hrdma_disk_close(a), HRDMA_OK);
    CHECK_EQ(hrdma_disk_close(b), HRDMA_OK);
    unlink(a_path);
    unlink(b_path);
    OK("ring and registered memory released, counters back to zero");
    printf("1..%d\n", hrdma_test_n);
    return 0;
}
