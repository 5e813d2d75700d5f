/* hrdma_fd_pread_verify: pread and CRC32C of the chunks read, in one call. */
#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#define BPC 512
#define CHUNKS 9
#define FILE_BYTES (CHUNKS * BPC - 412) /* the last chunk 100 bytes */

static char path[128];

static void remove_file(void)
{
    unlink(path);
}

int main(void)
{
    static unsigned char data[FILE_BYTES], buf[FILE_BYTES + BPC], sums[CHUNKS * 4];
    size_t done, bad;
    int fd, wfd;

    snprintf(path, sizeof(path), "/tmp/hrdma_test_pread_verify.%ld", (long)getpid());
    atexit(remove_file);
    for (int i = 0; i < FILE_BYTES; i++) {
        data[i] = (unsigned char)(i * 13 + 5);
    }
    CHECK_EQ(hrdma_crc32c_chunks_compute(data, FILE_BYTES, BPC, sums, sizeof(sums)), HRDMA_OK);
    wfd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
    CHECK(wfd >= 0);
    CHECK_EQ(write(wfd, data, sizeof(data)), (long long)sizeof(data));
    fd = open(path, O_RDONLY);
    CHECK(fd >= 0);

    /* the whole file, its last chunk short: read and verified */
    memset(buf, 0, sizeof(buf));
    done = 0;
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, FILE_BYTES, 0, 0, BPC, sums, sizeof(sums), &done, &bad),
             HRDMA_OK);
    CHECK_EQ(done, FILE_BYTES);
    CHECK(memcmp(buf, data, FILE_BYTES) == 0);
    OK("whole file: read and verified");

    /* a range from a chunk boundary, its sums from that chunk, with nowait (just written: cached) */
    memset(buf, 0, sizeof(buf));
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 3 * BPC, 2 * BPC, 1, BPC, sums + 8, 3 * 4, &done, &bad),
             HRDMA_OK);
    CHECK_EQ(done, 3 * BPC);
    CHECK(memcmp(buf, data + 2 * BPC, 3 * BPC) == 0);
    OK("a range of whole chunks, nowait on cached pages");

    /* a bad sum: the first bad chunk's offset in the range, the bytes still read */
    sums[4 * 4 + 1] ^= 0x40;
    bad = 12345;
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 5 * BPC, 1 * BPC, 0, BPC, sums + 4, 5 * 4, &done, &bad),
             HRDMA_ERR_CHECKSUM);
    CHECK_EQ(bad, 3 * BPC);
    CHECK(memcmp(buf, data + BPC, 5 * BPC) == 0);
    OK("a bad chunk: HRDMA_ERR_CHECKSUM at its offset in the range");

    /* not verified without sums (a stream that skips checksums) */
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 5 * BPC, 1 * BPC, 0, BPC, NULL, 0, &done, &bad), HRDMA_OK);
    CHECK_EQ(done, 5 * BPC);
    sums[4 * 4 + 1] ^= 0x40;
    OK("no sums: read, not verified");

    /* too few sums for the chunks read: refused */
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 3 * BPC, 0, 0, BPC, sums, 2 * 4, &done, &bad),
             HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_pread_verify(-1, buf, 10, 0, 0, BPC, sums, 4, &done, &bad), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_pread_verify(fd, NULL, 10, 0, 0, BPC, sums, 4, &done, &bad), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 10, 0, 0, 0, sums, 4, &done, &bad), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 10, 0, 0, BPC, sums, 4, NULL, &bad), HRDMA_ERR_INVALID);
    OK("short sums and bad arguments refused");

    /* truncated in the middle of a chunk under the reader: a short count, only the whole chunks
     * read are verified (a bad sum of the cut chunk is not a checksum error) */
    CHECK_EQ(ftruncate(wfd, 4 * BPC + 200), 0);
    sums[4 * 4] ^= 0x01;
    memset(buf, 0, sizeof(buf));
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 6 * BPC, 0, 0, BPC, sums, 6 * 4, &done, &bad), HRDMA_OK);
    CHECK_EQ(done, 4 * BPC + 200);
    CHECK(memcmp(buf, data, 4 * BPC + 200) == 0);
    sums[4 * 4] ^= 0x01;
    /* past the end: nothing read */
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, BPC, 5 * BPC, 1, BPC, sums + 20, 4, &done, &bad), HRDMA_OK);
    CHECK_EQ(done, 0);
    OK("truncated under the read: a short count, whole chunks verified");

    /* evicted pages (clean, advised away) are not waited for with nowait: a short count; a file
     * system that keeps them (tmpfs) reads them all */
    CHECK_EQ(fsync(wfd), 0);
    CHECK_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 4 * BPC, 0, 1, BPC, sums, 4 * 4, &done, &bad), HRDMA_OK);
    CHECK(done <= 4 * BPC);
    CHECK(memcmp(buf, data, done) == 0);
    printf("# nowait after DONTNEED read %zu of %d bytes\n", done, 4 * BPC);
    CHECK_EQ(hrdma_fd_pread_verify(fd, buf, 4 * BPC, 0, 0, BPC, sums, 4 * 4, &done, &bad), HRDMA_OK);
    CHECK_EQ(done, 4 * BPC);
    OK("nowait on evicted pages: no wait, what was read is verified");

    close(fd);
    close(wfd);
    return 0;
}
