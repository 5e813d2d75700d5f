/*
 * A Unix domain socket client for the same-host data path: a client connects
 * to a DataNode's socket, exchanges a few small messages and receives open
 * file descriptors (SCM_RIGHTS), all on the caller's thread. Every wait is
 * bounded by the caller's timeout (poll; the socket itself stays blocking for
 * connect, each send and receive is MSG_DONTWAIT), so a DataNode that never
 * answers costs the caller at most that. Open sockets are counted (leak
 * checks). The sending side of descriptors
 * is here too, for a peer in the same process (tests); the DataNode's plugin
 * has its own.
 */
#include "hrdma_int.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static atomic_uint_fast64_t hrdma_uds_open;

static int hrdma_uds_status(int err)
{
    switch (err) {
    case ENOMEM:
    case ENOBUFS:
        return HRDMA_ERR_NOMEM;
    case EINVAL:
    case EBADF:
    case ENOTSOCK:
    case ENAMETOOLONG:
        return HRDMA_ERR_INVALID;
    case ENOENT:
    case ENOTDIR:
    case ECONNREFUSED:
        return HRDMA_ERR_UNREACHABLE;
    case ECONNRESET:
    case EPIPE:
    case ENOTCONN:
        return HRDMA_ERR_PEER_FAILED;
    case ETIMEDOUT:
        return HRDMA_ERR_TIMEOUT;
    default:
        return HRDMA_ERR_IO;
    }
}

static int64_t hrdma_uds_now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The deadline of a wait of timeout_ms from now; -1: none (timeout_ms < 0). */
static int64_t hrdma_uds_deadline(int timeout_ms)
{
    return timeout_ms < 0 ? -1 : hrdma_uds_now_ms() + timeout_ms;
}

/* Milliseconds left until deadline, at least 0; -1: no deadline. */
static int hrdma_uds_left(int64_t deadline)
{
    int64_t left;

    if (deadline < 0) {
        return -1;
    }
    left = deadline - hrdma_uds_now_ms();
    return left <= 0 ? 0 : left > INT_MAX ? INT_MAX : (int)left;
}

/* Waits until fd has events (or hangs up: the call that follows says how),
 * or the deadline passes. */
static int hrdma_uds_wait(int fd, short events, int64_t deadline)
{
    struct pollfd p;
    int n;

    for (;;) {
        p.fd = fd;
        p.events = events;
        p.revents = 0;
        n = poll(&p, 1, hrdma_uds_left(deadline));
        if (n > 0) {
            return HRDMA_OK;
        }
        if (n == 0) {
            errno = ETIMEDOUT;
            return HRDMA_ERR_TIMEOUT;
        }
        if (errno != EINTR) {
            return hrdma_uds_status(errno);
        }
    }
}

int hrdma_uds_connect(const char *path, int timeout_ms, int *fd_p)
{
    struct sockaddr_un sa;
    struct timeval tv;
    int64_t deadline;
    size_t n;
    int fd, err, left;

    if (path == NULL || fd_p == NULL) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    n = strlen(path);
    if (n == 0 || n >= sizeof(sa.sun_path)) {
        errno = ENAMETOOLONG;
        return HRDMA_ERR_INVALID;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    memcpy(sa.sun_path, path, n + 1);
    deadline = hrdma_uds_deadline(timeout_ms);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        return hrdma_uds_status(errno);
    }
    for (;;) {
        /* A connect to a listener whose backlog is full waits for room, up to
         * SO_SNDTIMEO (0 would be forever: the shortest wait stands for none). */
        left = hrdma_uds_left(deadline);
        tv.tv_sec = left < 0 ? 0 : left / 1000;
        tv.tv_usec = left < 0 ? 0 : left == 0 ? 1 : (left % 1000) * 1000;
        if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
            err = errno;
            goto err_close;
        }
        if (connect(fd, (const struct sockaddr *)&sa,
                    (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n + 1)) == 0) {
            break;
        }
        err = errno;
        if (err == EINTR) {
            continue; /* the wait was interrupted before anything connected */
        }
        if (err == EISCONN) {
            break;
        }
        if (err == EAGAIN || err == EINPROGRESS) {
            err = ETIMEDOUT; /* the backlog stayed full for the whole wait */
        }
        goto err_close;
    }
    atomic_fetch_add(&hrdma_uds_open, 1);
    *fd_p = fd;
    return HRDMA_OK;

err_close:
    close(fd);
    errno = err;
    return hrdma_uds_status(err);
}

int hrdma_uds_pair(int *fd0_p, int *fd1_p)
{
    int sv[2];

    if (fd0_p == NULL || fd1_p == NULL) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) {
        return hrdma_uds_status(errno);
    }
    atomic_fetch_add(&hrdma_uds_open, 2);
    *fd0_p = sv[0];
    *fd1_p = sv[1];
    return HRDMA_OK;
}

int hrdma_uds_send(int fd, const void *buf, size_t len, int timeout_ms)
{
    return hrdma_uds_send_fds(fd, buf, len, NULL, 0, timeout_ms);
}

int hrdma_uds_send_fds(int fd, const void *buf, size_t len, const int *fds,
                       unsigned nfds, int timeout_ms)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * HRDMA_UDS_MAX_FDS)];
    } control;
    int64_t deadline = hrdma_uds_deadline(timeout_ms);
    struct cmsghdr *c;
    struct msghdr msg;
    struct iovec iov;
    size_t done = 0;
    ssize_t n;
    int st;

    if (fd < 0 || (buf == NULL && len > 0) || (fds == NULL && nfds > 0) ||
        nfds > HRDMA_UDS_MAX_FDS || (nfds > 0 && len == 0)) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    while (done < len) {
        memset(&msg, 0, sizeof(msg));
        iov.iov_base = (unsigned char *)buf + done;
        iov.iov_len = len - done;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        if (done == 0 && nfds > 0) { /* the descriptors go with the first bytes */
            memset(&control, 0, sizeof(control));
            msg.msg_control = control.buf;
            msg.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
            c = CMSG_FIRSTHDR(&msg);
            c->cmsg_level = SOL_SOCKET;
            c->cmsg_type = SCM_RIGHTS;
            c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
            memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
        }
        /* MSG_NOSIGNAL: a peer that went away is EPIPE, not SIGPIPE */
        n = sendmsg(fd, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n >= 0) {
            done += (size_t)n;
            continue;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return hrdma_uds_status(errno);
        }
        st = hrdma_uds_wait(fd, POLLOUT, deadline);
        if (st < 0) {
            return st;
        }
    }
    return HRDMA_OK;
}

int hrdma_uds_recv(int fd, void *buf, size_t len, int *fds, unsigned max_fds,
                   int timeout_ms, size_t *received_p, unsigned *nfds_p)
{
    /* Room for one descriptor more than asked for (CMSG_SPACE may round up to
     * more): a peer that sends too many is seen doing it, not cut short by
     * the kernel. */
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * (HRDMA_UDS_MAX_FDS + 1))];
    } control;
    int got[sizeof(control.buf) / sizeof(int)];
    int64_t deadline = hrdma_uds_deadline(timeout_ms);
    struct cmsghdr *c;
    struct msghdr msg;
    struct iovec iov;
    unsigned n = 0, i;
    int too_many = 0, st;
    ssize_t r;

    if (fd < 0 || buf == NULL || len == 0 || (fds == NULL && max_fds > 0) ||
        max_fds > HRDMA_UDS_MAX_FDS || received_p == NULL || nfds_p == NULL) {
        errno = EINVAL;
        return HRDMA_ERR_INVALID;
    }
    for (;;) {
        memset(&msg, 0, sizeof(msg));
        iov.iov_base = buf;
        iov.iov_len = len;
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.buf;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * (max_fds + 1));
        r = recvmsg(fd, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
        if (r >= 0) {
            break;
        }
        if (errno == EINTR) {
            continue;
        }
        if (errno != EAGAIN && errno != EWOULDBLOCK) {
            return hrdma_uds_status(errno);
        }
        st = hrdma_uds_wait(fd, POLLIN, deadline);
        if (st < 0) {
            return st;
        }
    }
    /* Every descriptor the kernel installed is ours now, to hand over or close. */
    for (c = CMSG_FIRSTHDR(&msg); c != NULL; c = CMSG_NXTHDR(&msg, c)) {
        size_t k;

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) {
            continue;
        }
        k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (i = 0; i < k; i++) {
            int d;

            memcpy(&d, CMSG_DATA(c) + i * sizeof(int), sizeof(d));
            if (n < sizeof(got) / sizeof(got[0])) {
                got[n++] = d;
            } else {
                close(d);
                too_many = 1;
            }
        }
    }
    if ((msg.msg_flags & MSG_CTRUNC) != 0 || n > max_fds || too_many) {
        /* The kernel dropped what did not fit: refuse the rest too, leak none. */
        for (i = 0; i < n; i++) {
            close(got[i]);
        }
        errno = EMSGSIZE;
        return HRDMA_ERR_TRUNCATED;
    }
    if (n > 0) {
        memcpy(fds, got, n * sizeof(int));
    }
    *received_p = (size_t)r;
    *nfds_p = n;
    return HRDMA_OK;
}

int hrdma_uds_close(int fd)
{
    if (fd < 0) {
        return HRDMA_ERR_INVALID;
    }
    atomic_fetch_sub(&hrdma_uds_open, 1);
    /* Linux frees the descriptor even when close fails (EINTR): never retry */
    if (close(fd) != 0 && errno != EINTR) {
        return hrdma_uds_status(errno);
    }
    return HRDMA_OK;
}

uint64_t hrdma_uds_sockets(void)
{
    return (uint64_t)atomic_load(&hrdma_uds_open);
}
