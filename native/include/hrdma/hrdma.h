/*
 * libhrdma: the native core of hdfs-rdma.
 *
 * Layers (dependencies point down only):
 *   engine   UCX (UCP) context, worker, listener, endpoints: active messages
 *            with rendezvous for bulk data, RMA put/get with packed rkeys,
 *            the UCP stream API, flush, close, peer-failure reporting.
 *   memory   page-aligned regions registered once with ucp_mem_map, counted.
 *   checksum CRC32C (ISA-L) in the HDFS layout: one big-endian sum per chunk.
 *   probe    libibverbs devices/ports, works with zero devices.
 *
 * Threading: a worker and everything created on it (listeners, endpoints,
 * operations, rkeys) belong to the one thread that calls
 * hrdma_worker_progress() on it. Only hrdma_worker_signal() may be called
 * from other threads. Callbacks run inside hrdma_worker_progress() on that
 * thread. Contexts, memory regions, checksum and probe functions are
 * thread-safe.
 *
 * Errors: every function returns an hrdma_status_t; 0 is success, negative
 * values are errors, HRDMA_INPROGRESS (1) means a completion callback follows.
 */
#ifndef HRDMA_HRDMA_H
#define HRDMA_HRDMA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a signature or a struct in this header changes. The JNI
 * layer and the Java loader check it at load time. */
#define HRDMA_ABI_VERSION 5

typedef enum {
    HRDMA_INPROGRESS      = 1,
    HRDMA_OK              = 0,
    HRDMA_ERR_INVALID     = -1,  /* bad argument or configuration */
    HRDMA_ERR_NOMEM       = -2,
    HRDMA_ERR_IO          = -3,  /* other transport or OS error */
    HRDMA_ERR_UNREACHABLE = -4,  /* nobody listens there / no route */
    HRDMA_ERR_PEER_FAILED = -5,  /* connection reset, peer died, timeout */
    HRDMA_ERR_CANCELED    = -6,  /* the endpoint was closed under the op */
    HRDMA_ERR_TIMEOUT     = -7,
    HRDMA_ERR_UNSUPPORTED = -8,
    HRDMA_ERR_CLOSED      = -9,  /* object already closed */
    HRDMA_ERR_CHECKSUM    = -10, /* CRC32C mismatch */
    HRDMA_ERR_BUSY        = -11, /* address in use, resource busy */
    HRDMA_ERR_NO_DEVICE   = -12,
    HRDMA_ERR_TRUNCATED   = -13, /* message longer than the receive buffer */
    HRDMA_ERR_AUTH        = -14, /* AEAD tag mismatch */
} hrdma_status_t;

/* Static text for a status; never NULL. */
const char *hrdma_status_str(int status);

/* ------------------------------------------------------------ checksum -- */

/* CRC32C (Castagnoli) of buf, continuing from crc. Start with crc = 0; the
 * result equals java.util.zip.CRC32C over the same bytes. */
uint32_t hrdma_crc32c(uint32_t crc, const void *buf, size_t len);

/* HDFS layout: one CRC32C per bytes_per_checksum chunk (the last may be
 * shorter), each stored big-endian in sums. sums_len must be at least
 * 4 * ceil(len / bytes_per_checksum). */
int hrdma_crc32c_chunks_compute(const void *data, size_t len,
                                uint32_t bytes_per_checksum,
                                void *sums, size_t sums_len);

/* Verifies data against sums in the same layout. On mismatch returns
 * HRDMA_ERR_CHECKSUM and stores the offset of the first bad chunk in
 * *bad_offset_p (if not NULL). */
int hrdma_crc32c_chunks_verify(const void *data, size_t len,
                               uint32_t bytes_per_checksum,
                               const void *sums, size_t sums_len,
                               size_t *bad_offset_p);

/* --------------------------------------------------------------- probe -- */

/* Writes one line per (device, port) into buf, NUL-terminated:
 *   device=<name> port=<n> state=<ACTIVE|DOWN|...> link_layer=<InfiniBand|Ethernet>
 *   rate_gbps=<float> width=<1x|4x|..> speed=<SDR|..|HDR|NDR|..> mtu=<n>
 *   gid0=<gid or -> netdev=<ifname or -> ipv4=<addr or ->
 * Zero devices is success with an empty string. HRDMA_ERR_TRUNCATED when buf
 * is too small (*needed_p says how much). */
int hrdma_probe_devices(char *buf, size_t buf_len, size_t *needed_p);

/* -------------------------------------------------------------- engine -- */

typedef struct hrdma_ctx      hrdma_ctx_t;
typedef struct hrdma_worker   hrdma_worker_t;
typedef struct hrdma_listener hrdma_listener_t;
typedef struct hrdma_ep       hrdma_ep_t;
typedef struct hrdma_mem      hrdma_mem_t;
typedef struct hrdma_rkey     hrdma_rkey_t;
typedef void                 *hrdma_conn_request_t;

/* Gives SIGSEGV, SIGBUS, SIGILL and SIGFPE back to whoever handled them
 * before UCX installed its error handlers (a JVM uses SIGSEGV for its own
 * null checks; UCX would treat those as crashes). Call once after loading. */
void hrdma_restore_signal_handlers(void);

/* Version string of the UCX library loaded at run time, e.g. "1.13.1". */
const char *hrdma_ucx_version(void);

/* Whether UCX's memory-event hooks are on in this process (1) or off (0).
 * They are off when libhrdma-preload ran before UCX loaded; a JVM needs them
 * off (native/src/preload/ucx_env.c says why). */
int hrdma_ucx_memory_hooks(void);

/* UCX configuration overrides, "NAME=value" entries without the UCX_ prefix
 * separated by ';' (e.g. "TLS=sm,tcp;MM_ERROR_HANDLING=y"), may be NULL or
 * "". Names and values are validated before UCX sees them (a bad connection
 * manager setting would otherwise abort the process): unknown names and bad
 * values give HRDMA_ERR_INVALID. (Values of transport-level settings, e.g.
 * TCP_* or MM_*, are only parsed by UCX when it opens the transport: a bad
 * one there is not caught here.) */
int hrdma_ctx_create(const char *ucx_config, hrdma_ctx_t **ctx_p);

/* Fails with HRDMA_ERR_BUSY while memory regions are still mapped or workers
 * remain (UCX asserts if registrations outlive ucp_cleanup). */
int hrdma_ctx_destroy(hrdma_ctx_t *ctx);

typedef struct {
    uint64_t bytes_registered;   /* bytes in currently mapped regions */
    uint64_t regions;            /* currently mapped regions */
    uint64_t endpoints;          /* endpoints not yet destroyed, all workers */
    uint64_t workers;
} hrdma_ctx_stats_t;

void hrdma_ctx_stats(const hrdma_ctx_t *ctx, hrdma_ctx_stats_t *stats);

/* The same counters summed over every context of the process (those
 * destroyed included: what they left behind stays counted); returns the
 * number of contexts not destroyed. A leak check for a whole test suite. */
uint64_t hrdma_process_stats(hrdma_ctx_stats_t *stats);

/* Writes the transports/devices UCX would use (ucp_context_print_info) into
 * buf, NUL-terminated, truncated to buf_len. */
int hrdma_ctx_info(hrdma_ctx_t *ctx, char *buf, size_t buf_len);

/* Memory: allocates length bytes (rounded up to the page size), page-aligned,
 * and registers them with ucp_mem_map. Counted in hrdma_ctx_stats. */
int hrdma_mem_map(hrdma_ctx_t *ctx, size_t length, hrdma_mem_t **mem_p);
void *hrdma_mem_address(const hrdma_mem_t *mem);
size_t hrdma_mem_length(const hrdma_mem_t *mem);
/* Packs the remote key into buf; *len_p is the packed length (also when
 * HRDMA_ERR_TRUNCATED is returned). */
int hrdma_mem_pack_rkey(hrdma_mem_t *mem, void *buf, size_t buf_len,
                        size_t *len_p);
int hrdma_mem_unmap(hrdma_mem_t *mem);

/* Callbacks, all run on the worker's progress thread. */
typedef struct {
    void *arg;
    /* A client connects to a listener. The callee calls hrdma_conn_accept()
     * or hrdma_conn_reject() before it returns; req is valid only until
     * then (if neither is called, the request is rejected). */
    void (*on_conn_request)(void *arg, uint64_t listener_token,
                            hrdma_conn_request_t req, const char *peer_addr);
    /* An active message arrived on an endpoint. The callee either returns a
     * negative status (message dropped) or returns HRDMA_OK after setting
     * *dst_p (at least length bytes), optionally *dst_mem_p (the region dst
     * lies in, or NULL) and *recv_cookie_p. The data is then placed at dst
     * and on_recv_done(recv_cookie) follows (possibly before on_am returns
     * to UCX, never before on_am itself returns). page_offset: the sender's
     * placement hint (hrdma_ep_am_send_placed), in [0, HRDMA_PLACE_PAGE): the
     * message byte at that offset within a page should land page-aligned
     * (the callee picks dst accordingly); -1 when the message carries none or
     * one this side does not understand. */
    int (*on_am)(void *arg, uint64_t ep_token, uint16_t am_id, size_t length,
                 int32_t page_offset, void **dst_p, hrdma_mem_t **dst_mem_p,
                 uint64_t *recv_cookie_p);
    void (*on_recv_done)(void *arg, uint64_t ep_token, uint64_t recv_cookie,
                         int status, size_t length);
    /* A send, put, get, flush, stream send/recv or close that returned
     * HRDMA_INPROGRESS has finished. length: bytes received for stream
     * receives, else the request length. */
    void (*on_op_done)(void *arg, uint64_t ep_token, uint64_t op_cookie,
                       int status, size_t length);
    /* The endpoint failed (peer died, connection reset). Every outstanding
     * operation on it completes with an error too. The callee must still
     * call hrdma_ep_close() and hrdma_ep_destroy(). Called at most once per
     * endpoint, never after hrdma_ep_close(). UCX 1.13 has no separate
     * "remote closed" event: a peer closing its endpoint gracefully also
     * arrives here (HRDMA_ERR_PEER_FAILED). */
    void (*on_ep_error)(void *arg, uint64_t ep_token, int status);
} hrdma_worker_callbacks_t;

int hrdma_worker_create(hrdma_ctx_t *ctx, const hrdma_worker_callbacks_t *cb,
                        hrdma_worker_t **worker_p);
/* Fails with HRDMA_ERR_BUSY while listeners, endpoints or rkeys remain.
 * Otherwise progresses the worker until every operation still outstanding
 * (e.g. canceled by a forced close, or on an endpoint destroyed early) has
 * completed, for at most 2 s or the close timeout if shorter; their
 * callbacks run as in hrdma_worker_progress(). What is left then completes
 * with HRDMA_ERR_CANCELED before the worker goes away: every operation
 * that returned HRDMA_INPROGRESS gets exactly one callback (a close the
 * owner abandoned with hrdma_ep_destroy() gets none). */
int hrdma_worker_destroy(hrdma_worker_t *worker);
/* Bounds a graceful hrdma_ep_close() on this worker's endpoints (default
 * 5000 ms; 0 gives up at the next progress call). Applies to closes
 * started afterwards. */
int hrdma_worker_set_close_timeout(hrdma_worker_t *worker, int timeout_ms);
/* Runs ucp_worker_progress until nothing more happens (bounded); returns
 * the number of events (>= 0). */
int hrdma_worker_progress(hrdma_worker_t *worker);
/* Blocks until the worker has events, hrdma_worker_signal() is called, or
 * timeout_ms passes (-1: forever). Returns HRDMA_OK or HRDMA_ERR_TIMEOUT. */
int hrdma_worker_wait(hrdma_worker_t *worker, int timeout_ms);
/* Wakes a thread blocked in hrdma_worker_wait(). Any thread. */
int hrdma_worker_signal(hrdma_worker_t *worker);

/* ip: numeric IPv4/IPv6 or "0.0.0.0"; port 0 picks a free port. */
int hrdma_listener_create(hrdma_worker_t *worker, const char *ip, int port,
                          uint64_t token, hrdma_listener_t **listener_p);
int hrdma_listener_port(const hrdma_listener_t *listener);
int hrdma_listener_destroy(hrdma_listener_t *listener);

int hrdma_conn_accept(hrdma_worker_t *worker, hrdma_conn_request_t req,
                      uint64_t ep_token, hrdma_ep_t **ep_p);
int hrdma_conn_reject(hrdma_worker_t *worker, uint64_t listener_token,
                      hrdma_conn_request_t req);

/* Starts a connection (error mode PEER). Operations may be posted at once;
 * a failure to connect arrives as on_ep_error (HRDMA_ERR_UNREACHABLE or
 * HRDMA_ERR_PEER_FAILED) and fails the posted operations. */
int hrdma_ep_connect(hrdma_worker_t *worker, const char *ip, int port,
                     uint64_t ep_token, hrdma_ep_t **ep_p);

/* Active message send. mem may be NULL (UCX then registers on the fly).
 * Large messages go by rendezvous (zero-copy RDMA on IB/RoCE). Returns
 * HRDMA_OK when done at once (no callback), HRDMA_INPROGRESS when
 * on_op_done(op_cookie) follows, or an error. */
int hrdma_ep_am_send(hrdma_ep_t *ep, uint16_t am_id, const void *buf,
                     size_t len, hrdma_mem_t *mem, uint64_t op_cookie);

/* The page placement hints are about: 4 KiB, what O_DIRECT needs. */
#define HRDMA_PLACE_PAGE 4096
/* As hrdma_ep_am_send, with a placement hint in the AM user header: byte
 * place_at of the message should land at a page-aligned address at the
 * receiver (on_am's page_offset is place_at % HRDMA_PLACE_PAGE). place_at
 * < 0 sends no header, as hrdma_ep_am_send; place_at > len is invalid.
 * Receivers that predate hints ignore the header. */
int hrdma_ep_am_send_placed(hrdma_ep_t *ep, uint16_t am_id, const void *buf,
                            size_t len, hrdma_mem_t *mem, int64_t place_at,
                            uint64_t op_cookie);

/* One-sided: put local -> remote_addr, get remote_addr -> local. */
int hrdma_rkey_unpack(hrdma_ep_t *ep, const void *packed, size_t len,
                      hrdma_rkey_t **rkey_p);
void hrdma_rkey_destroy(hrdma_rkey_t *rkey);
int hrdma_ep_put(hrdma_ep_t *ep, const void *local, size_t len,
                 hrdma_mem_t *mem, uint64_t remote_addr, hrdma_rkey_t *rkey,
                 uint64_t op_cookie);
int hrdma_ep_get(hrdma_ep_t *ep, void *local, size_t len, hrdma_mem_t *mem,
                 uint64_t remote_addr, hrdma_rkey_t *rkey,
                 uint64_t op_cookie);
/* Completes when all puts/gets posted before it are done remotely. */
int hrdma_ep_flush(hrdma_ep_t *ep, uint64_t op_cookie);

/* UCP stream API: byte-stream semantics. A receive completes with whatever
 * arrived, 1..cap bytes (on_op_done length). */
int hrdma_ep_stream_send(hrdma_ep_t *ep, const void *buf, size_t len,
                         hrdma_mem_t *mem, uint64_t op_cookie);
int hrdma_ep_stream_recv(hrdma_ep_t *ep, void *buf, size_t cap,
                         hrdma_mem_t *mem, uint64_t op_cookie,
                         size_t *received_p);

/* Closes the endpoint. force=1 drops it at once: outstanding operations
 * complete with an error (HRDMA_ERR_CANCELED) in a later progress call.
 * force=0 first waits (progress) for the endpoint's outstanding operations
 * to complete (stream receives excepted: they complete with an error when
 * the endpoint goes), then flushes and disconnects. A graceful close that
 * has not finished within the close timeout (a peer that stopped
 * progressing) ends with on_op_done(HRDMA_ERR_TIMEOUT): operations still
 * outstanding are canceled as by force=1. No new operations are accepted
 * once a close started (HRDMA_ERR_CLOSED), nor incoming messages.
 * After HRDMA_OK, or after on_op_done(op_cookie), call hrdma_ep_destroy().
 * hrdma_ep_destroy() on an endpoint whose close is still in flight (an
 * owner that stops waiting) is allowed: the close then gets no callback,
 * and the endpoint's outstanding operations are canceled as by force=1. */
int hrdma_ep_close(hrdma_ep_t *ep, int force, uint64_t op_cookie);
void hrdma_ep_destroy(hrdma_ep_t *ep);

/* ------------------------------------------------------------------ disk --
 * Block files (src/disk). Plain file descriptors; any thread. */

#define HRDMA_DISK_WRITE  0x1 /* open for writing (the file must exist) */
#define HRDMA_DISK_DIRECT 0x2 /* O_DIRECT: HRDMA_ERR_UNSUPPORTED where the
                                 filesystem refuses it */

/* Opens an existing file; *fd_p is a file descriptor for the calls below. */
int hrdma_disk_open(const char *path, int flags, int *fd_p);
int hrdma_disk_close(int fd);
/* Reserves [offset, offset+len) without changing the file's length
 * (fallocate FALLOC_FL_KEEP_SIZE): one or few extents for a file written in
 * pieces. HRDMA_ERR_UNSUPPORTED where the filesystem has no fallocate. */
int hrdma_disk_preallocate(int fd, uint64_t offset, uint64_t len);
/* Releases what was reserved past the end of the file (ftruncate to the
 * current length). */
int hrdma_disk_trim(int fd);
/* Drops [offset, offset+len) from the page cache (posix_fadvise DONTNEED);
 * with written != 0 first writes it back and waits (sync_file_range), since
 * dirty pages cannot be dropped. */
int hrdma_disk_drop_cache(int fd, uint64_t offset, uint64_t len, int written);
/* Starts writing [offset, offset+len) back without waiting
 * (sync_file_range WRITE), so a later hrdma_disk_drop_cache finds it clean. */
int hrdma_disk_writeback(int fd, uint64_t offset, uint64_t len);
/* Extents of the whole file (FIEMAP). */
int hrdma_disk_extent_count(int fd, uint32_t *count_p);
/* The alignment O_DIRECT needs on this file (offset, length, address). */
int hrdma_disk_direct_alignment(int fd, uint32_t *align_p);
/* *resident_p: how many bytes of [offset, offset+len), cut at the file's end,
 * are in the page cache now (cachestat for the whole pages, mincore over a
 * mapping for partial ones and on kernels before 6.5; nothing is read or
 * faulted in). The kernel tells a file's residency only to a process that
 * owns the file or may write it; to others mincore shows every page resident. */
int hrdma_disk_resident(int fd, uint64_t offset, uint64_t len,
                        uint64_t *resident_p);

/* An io_uring of `depth` entries (liburing) for reads and writes of block
 * files, typically O_DIRECT into registered (hrdma_mem) memory. One thread
 * uses a ring at a time. */
typedef struct hrdma_disk_ring hrdma_disk_ring_t;

typedef struct {
    uint64_t cookie;
    int64_t  result;   /* bytes moved, or a negative hrdma_status_t */
} hrdma_disk_completion_t;

int hrdma_disk_ring_create(unsigned depth, hrdma_disk_ring_t **ring_p);
/* HRDMA_ERR_BUSY while requests are in flight. */
int hrdma_disk_ring_destroy(hrdma_disk_ring_t *ring);
/* Queues a read or write and submits it; HRDMA_ERR_BUSY when depth requests
 * are in flight already. */
int hrdma_disk_ring_read(hrdma_disk_ring_t *ring, int fd, void *buf,
                         size_t len, uint64_t offset, uint64_t cookie);
int hrdma_disk_ring_write(hrdma_disk_ring_t *ring, int fd, const void *buf,
                          size_t len, uint64_t offset, uint64_t cookie);
/* Reaps up to max completions, waiting for at least min_wait of them;
 * *n_p is how many were stored. */
int hrdma_disk_ring_reap(hrdma_disk_ring_t *ring, hrdma_disk_completion_t *out,
                         unsigned max, unsigned min_wait, unsigned *n_p);
unsigned hrdma_disk_ring_inflight(const hrdma_disk_ring_t *ring);

/* ------------------------------------------------------------------- shm --
 * Shared-memory segments (src/shm) for same-host reads: the DataNode creates
 * a file in a tmpfs (/dev/shm) and reads block data into it, a client on the
 * same host maps the same file read-only. Any thread. len is a multiple of
 * the page size; mappings are page aligned. On failure errno is that of the
 * failing system call (EINVAL for a refused argument), for messages. */

/* Creates path (O_EXCL, mode 0600), reserves all len bytes (fallocate) and
 * maps them read-write (MAP_SHARED); the file descriptor is not kept. A full
 * tmpfs fails here (HRDMA_ERR_NOMEM), not with SIGBUS at a later store.
 * HRDMA_ERR_BUSY when path exists (it is left alone). On any other failure
 * the file is removed again and nothing stays mapped. */
int hrdma_shm_create(const char *path, size_t len, void **addr_p);
/* Maps the first len bytes of an existing regular file read-only
 * (MAP_SHARED). HRDMA_ERR_INVALID when it is not a regular file or is shorter
 * than len (its creator never shrinks it: a mapping past the end faults with
 * SIGBUS); HRDMA_ERR_IO when it cannot be opened (errno says why). */
int hrdma_shm_open(const char *path, size_t len, void **addr_p);
/* Unmaps what create or open mapped (the same addr and len). Removing the
 * file is the creator's business: mappings outlive the name. */
int hrdma_shm_unmap(void *addr, size_t len);
/* Bytes mapped by create and open and not unmapped yet, process-wide. */
uint64_t hrdma_shm_mapped_bytes(void);
/* An anonymous segment to pass by descriptor (same-host writes by
 * reference: the receiving DataNode makes it, the sender maps it): a memfd
 * (no name in any file system), all len bytes reserved (fallocate), sealed
 * against shrinking and growing (F_SEAL_SHRINK, F_SEAL_GROW, F_SEAL_SEAL: the
 * peer that gets the descriptor cannot truncate it under our mapping, which
 * would fault with SIGBUS here), mapped read-write (MAP_SHARED; counted as
 * create's). *fd_p is the descriptor (O_CLOEXEC), the caller's to close (after
 * passing it); the mapping outlives it. */
int hrdma_shm_create_sealed(size_t len, void **addr_p, int *fd_p);
/* Frees the memory behind [addr, addr + len) of a read-write shared mapping
 * (MADV_REMOVE: a hole punched in the file), so that a peer still holding the
 * segment's descriptor or a mapping of it after its connection ended keeps
 * none of this process's memory; it reads zeros, and what it writes again is
 * charged to it. Called before the creator unmaps a sealed segment. */
int hrdma_shm_discard(void *addr, size_t len);

/* ----------------------------------------------------------------- fdmap --
 * Files received from another process (src/fdmap): the short-circuit reader
 * gets open descriptors of a replica's block and .meta files from the
 * DataNode over a Unix domain socket (SCM_RIGHTS) and maps ranges of them
 * read-only. Any thread. Descriptors held and bytes mapped are counted
 * process-wide (leak checks). errno as for shm. */

/* Opens the regular file at path read-only (O_CLOEXEC) for passing to
 * another process (the DataNode's side); not counted: the caller closes it
 * after sending. HRDMA_ERR_INVALID when it is not a regular file. */
int hrdma_fd_open_read(const char *path, int *fd_p);
/* Takes fd over: it must be a regular file (its size in *size_p), else it is
 * closed at once and HRDMA_ERR_INVALID returned. Counts it as held until
 * hrdma_fd_close; sets FD_CLOEXEC. */
int hrdma_fd_adopt(int fd, uint64_t *size_p);
/* Closes an adopted descriptor; mappings of it stay valid. */
int hrdma_fd_close(int fd);
/* Maps [offset, offset + len) of the file at fd read-only (MAP_SHARED, any
 * offset: the mapping starts at its page); *addr_p is the byte at offset.
 * HRDMA_ERR_INVALID when the range is empty or ends past the file's end (a
 * page past the end would fault with SIGBUS). */
int hrdma_fd_map(int fd, uint64_t offset, size_t len, const void **addr_p);
/* Unmaps what hrdma_fd_map mapped (its addr and len). */
int hrdma_fd_unmap(const void *addr, size_t len);
/* Maps the first len bytes of the file at fd read-write (MAP_SHARED), for a
 * segment received from hrdma_shm_create_sealed of another process: the file
 * must be at least len bytes and sealed against shrinking (F_SEAL_SHRINK),
 * else HRDMA_ERR_INVALID (a creator that could truncate it would make our
 * stores fault with SIGBUS). Counted and unmapped as hrdma_fd_map's. */
int hrdma_fd_map_shared(int fd, size_t len, void **addr_p);
/* Advises the kernel that a mapping made by hrdma_fd_map (its addr and len)
 * is read at random (MADV_RANDOM): a fault reads its own page only, not a
 * read-around window of the device's read-ahead size. */
int hrdma_fd_advise_random(const void *addr, size_t len);
/* Asks the kernel to read [addr, addr + len) of such a mapping in now
 * (MADV_WILLNEED: asynchronous read-ahead of the range in large requests),
 * so a large read of cold pages is not faulted in a page at a time. */
int hrdma_fd_advise_willneed(const void *addr, size_t len);
/* Reads up to len bytes at offset of fd into buf (retrying short reads and
 * EINTR); *done_p < len only where the file ends. Unlike a mapping, a file
 * truncated under the read only shortens the count (no SIGBUS). */
int hrdma_fd_pread(int fd, void *buf, size_t len, uint64_t offset, size_t *done_p);
/* Reads up to len bytes at offset of fd into buf as hrdma_fd_pread does and
 * verifies the CRC32C chunks (HDFS layout, bpc bytes each, sums big-endian
 * from the range's first chunk; offset on a chunk boundary) of what was read:
 * the whole range (its last chunk may be short: the file's last) when all of
 * it was read, else the whole chunks read. *done_p is the bytes read, fewer
 * than len where the file ends or, with nowait, where the page cache does not
 * hold the next page (preadv2 RWF_NOWAIT: nothing waits on the disk, so a
 * caller holding memory pinned does not hold it across I/O; a file system
 * that cannot tell also gives a short count). sums NULL: nothing verified.
 * HRDMA_ERR_CHECKSUM with the first bad chunk's offset in *bad_p (if not
 * NULL); HRDMA_ERR_INVALID when sums_len is short of the chunks read. */
int hrdma_fd_pread_verify(int fd, void *buf, size_t len, uint64_t offset,
                          int nowait, uint32_t bpc, const void *sums,
                          size_t sums_len, size_t *done_p, size_t *bad_p);
/* Asks the kernel to read [offset, offset + len) of fd into the page cache
 * (posix_fadvise WILLNEED; len 0: to the end). */
int hrdma_fd_fadvise_willneed(int fd, uint64_t offset, uint64_t len);
/* Bytes mapped by hrdma_fd_map and not unmapped yet (whole pages from the
 * range's page start). */
uint64_t hrdma_fd_mapped_bytes(void);
/* Descriptors adopted and not closed yet. */
uint64_t hrdma_fds_held(void);

/* ------------------------------------------------------------------ uds --
 * Unix domain socket client (src/uds): a short exchange with a DataNode on
 * the same host (a request, its answer, open descriptors passed with
 * SCM_RIGHTS), blocking, on the caller's thread. Each call waits at most its
 * timeout_ms (-1: no bound; 0: only what needs no waiting), signals (EINTR)
 * included. A receive that timed out has taken nothing (it may be called
 * again); a send that timed out, or any call that failed otherwise, may have
 * sent or taken part of a message: the caller closes the socket then. One
 * thread uses a socket at a time. errno as for shm. */

/* Most descriptors one hrdma_uds_recv takes. */
#define HRDMA_UDS_MAX_FDS 8

/* Connects a stream socket (SOCK_CLOEXEC) to path; *fd_p is it, counted in
 * hrdma_uds_sockets until hrdma_uds_close. HRDMA_ERR_UNREACHABLE when nothing
 * listens there (no such path, refused), HRDMA_ERR_TIMEOUT when the
 * listener's backlog stayed full, HRDMA_ERR_INVALID when path does not fit a
 * socket address. */
int hrdma_uds_connect(const char *path, int timeout_ms, int *fd_p);
/* A connected pair of stream sockets (SOCK_CLOEXEC), both counted as
 * hrdma_uds_connect's: for a peer in the same process (tests). */
int hrdma_uds_pair(int *fd0_p, int *fd1_p);
/* Sends all len bytes (without SIGPIPE: a peer gone is HRDMA_ERR_PEER_FAILED). */
int hrdma_uds_send(int fd, const void *buf, size_t len, int timeout_ms);
/* As hrdma_uds_send, passing nfds (at most HRDMA_UDS_MAX_FDS) descriptors
 * with the first bytes sent (len at least 1 then); the caller keeps its own
 * and closes them when it likes. */
int hrdma_uds_send_fds(int fd, const void *buf, size_t len, const int *fds,
                       unsigned nfds, int timeout_ms);
/* Receives 1..len bytes, as they arrive, and the descriptors that came with
 * them (recvmsg, MSG_CMSG_CLOEXEC): up to max_fds (at most
 * HRDMA_UDS_MAX_FDS) into fds, *nfds_p of them, which are the caller's to
 * close (or hrdma_fd_adopt). *received_p 0: the peer closed its end. More
 * descriptors than max_fds, or control data the kernel cut short
 * (MSG_CTRUNC), fail with HRDMA_ERR_TRUNCATED and every descriptor of the
 * message closed. */
int hrdma_uds_recv(int fd, void *buf, size_t len, int *fds, unsigned max_fds,
                   int timeout_ms, size_t *received_p, unsigned *nfds_p);
/* Closes a socket of hrdma_uds_connect or hrdma_uds_pair (also when close
 * reports an error). */
int hrdma_uds_close(int fd);
/* Sockets of hrdma_uds_connect and hrdma_uds_pair not closed yet,
 * process-wide (leak checks). Apart from hrdma_fds_held: a socket lives only
 * while its exchange runs, and that count is of what outlives exchanges. */
uint64_t hrdma_uds_sockets(void);

/* ---------------------------------------------------------------- aead -- */

/* AES-GCM (OpenSSL's libcrypto) with a 12-byte nonce and a 16-byte tag, the
 * same bytes as the JDK's AES/GCM/NoPadding, for messages in registered
 * memory: sealed and opened in place, no copy, no heap. One object seals or
 * opens one direction; not thread-safe. */
typedef struct hrdma_gcm hrdma_gcm_t;

#define HRDMA_GCM_TAG_BYTES 16
#define HRDMA_GCM_NONCE_BYTES 12

/* 1 when this build has AES-GCM (linked with libcrypto), else 0. */
int hrdma_gcm_available(void);
/* key_len 16 or 32. HRDMA_ERR_UNSUPPORTED in a build without libcrypto. */
int hrdma_gcm_create(const void *key, size_t key_len, int encrypt,
                     hrdma_gcm_t **out);
void hrdma_gcm_destroy(hrdma_gcm_t *g);
/* Seals len bytes at src into dst: the ciphertext, then the tag (len + 16
 * bytes). dst is src (in place) or does not overlap it. */
int hrdma_gcm_seal(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   const void *src, size_t len, void *dst);
/* Opens len bytes at buf (ciphertext, then the tag) in place: the plaintext
 * is the first len - 16 bytes on HRDMA_OK; HRDMA_ERR_AUTH when the tag does
 * not match (the bytes are then garbage and must not be used). */
int hrdma_gcm_open(hrdma_gcm_t *g, const uint8_t nonce[HRDMA_GCM_NONCE_BYTES],
                   void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* HRDMA_HRDMA_H */
