#include "hrdma_test.h"

#include <hrdma/hrdma.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static char sock_path[108];
static char file_path[128];

static void remove_files(void)
{
    unlink(sock_path);
    unlink(file_path);
}

/* Descriptors open in this process (the directory's own not counted). */
static int open_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    struct dirent *e;
    int n = 0;

    CHECK(d != NULL);
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] != '.') {
            n++;
        }
    }
    closedir(d);
    return n - 1;
}

static long long now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int listen_at(const char *path, int backlog)
{
    struct sockaddr_un sa;
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    CHECK(s >= 0);
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    strcpy(sa.sun_path, path);
    unlink(path);
    CHECK_EQ(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
    CHECK_EQ(listen(s, backlog), 0);
    return s;
}

/* Sends one byte with n descriptors, as the DataNode's plugin sends each. */
static void send_fds(int s, const int *fds, int n)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * 16)];
    } control;
    struct msghdr msg;
    struct iovec iov;
    struct cmsghdr *c;
    char byte = 'F';

    memset(&msg, 0, sizeof(msg));
    memset(&control, 0, sizeof(control));
    iov.iov_base = &byte;
    iov.iov_len = 1;
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.buf;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n);
    c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)n);
    CHECK_EQ(sendmsg(s, &msg, 0), 1);
}

static void on_alarm(int sig)
{
    (void)sig;
}

int main(void)
{
    int lst, cl, srv, fd, files[6], got[HRDMA_UDS_MAX_FDS], sp[2], fds0, i;
    unsigned char buf[64];
    unsigned nfds;
    size_t n;
    uint64_t size;
    long long t0, took;
    struct sigaction sa;
    struct itimerval it;
    static char big[1 << 20];

    snprintf(sock_path, sizeof(sock_path), "/tmp/hrdma_test_uds.%ld.sock", (long)getpid());
    snprintf(file_path, sizeof(file_path), "/tmp/hrdma_test_uds.%ld.file", (long)getpid());
    atexit(remove_files);
    fd = open(file_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    CHECK(fd >= 0);
    CHECK_EQ(write(fd, "0123456789", 10), 10);
    close(fd);
    for (i = 0; i < 6; i++) {
        files[i] = open(file_path, O_RDONLY | O_CLOEXEC);
        CHECK(files[i] >= 0);
    }
    lst = listen_at(sock_path, 8);
    fds0 = open_fds();

    /* request, answer, two descriptors: the exchange of a short-circuit read */
    CHECK_EQ(hrdma_uds_connect(sock_path, 1000, &cl), HRDMA_OK);
    CHECK(fcntl(cl, F_GETFD) & FD_CLOEXEC);
    CHECK_EQ(hrdma_uds_sockets(), 1);
    srv = accept(lst, NULL, NULL);
    CHECK(srv >= 0);
    CHECK_EQ(hrdma_uds_send(cl, "ping", 4, 1000), HRDMA_OK);
    CHECK_EQ(read(srv, buf, sizeof(buf)), 4);
    CHECK(memcmp(buf, "ping", 4) == 0);
    CHECK_EQ(write(srv, "pong", 4), 4);
    CHECK_EQ(hrdma_uds_recv(cl, buf, sizeof(buf), got, 0, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(n, 4);
    CHECK_EQ(nfds, 0);
    send_fds(srv, files, 2);
    memset(got, 0xff, sizeof(got));
    CHECK_EQ(hrdma_uds_recv(cl, buf, 1, got, 2, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(n, 1);
    CHECK_EQ(buf[0], 'F');
    CHECK_EQ(nfds, 2);
    CHECK_EQ(open_fds(), fds0 + 2 + 2); /* the two sockets, the two received */
    for (i = 0; i < 2; i++) {
        CHECK(got[i] >= 0 && got[i] != files[0] && got[i] != files[1]);
        CHECK(fcntl(got[i], F_GETFD) & FD_CLOEXEC); /* MSG_CMSG_CLOEXEC */
        CHECK_EQ(hrdma_fd_adopt(got[i], &size), HRDMA_OK);
        CHECK_EQ(size, 10);
    }
    CHECK_EQ(hrdma_fds_held(), 2);
    CHECK_EQ(hrdma_fd_close(got[0]), HRDMA_OK);
    CHECK_EQ(hrdma_fd_close(got[1]), HRDMA_OK);
    OK("connect, send, receive bytes, then two descriptors adopted");

    /* the peer closes: end of stream, then a send fails without SIGPIPE */
    close(srv);
    CHECK_EQ(hrdma_uds_recv(cl, buf, sizeof(buf), got, 2, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(n, 0);
    CHECK_EQ(nfds, 0);
    CHECK_EQ(hrdma_uds_send(cl, "x", 1, 1000), HRDMA_ERR_PEER_FAILED);
    CHECK_EQ(hrdma_uds_close(cl), HRDMA_OK);
    CHECK_EQ(hrdma_uds_sockets(), 0);
    CHECK_EQ(hrdma_fds_held(), 0);
    CHECK_EQ(open_fds(), fds0);
    OK("the peer closes early: end of stream, a send is PEER_FAILED; close uncounts");

    /* more descriptors than asked for, in one message: all closed, refused */
    CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp), 0);
    fds0 = open_fds();
    send_fds(sp[1], files, 3);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, 1, got, 2, 1000, &n, &nfds),
             HRDMA_ERR_TRUNCATED);
    CHECK_EQ(open_fds(), fds0);
    /* descriptors where none are expected */
    send_fds(sp[1], files, 1);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, sizeof(buf), NULL, 0, 1000, &n, &nfds),
             HRDMA_ERR_TRUNCATED);
    CHECK_EQ(open_fds(), fds0);
    OK("more descriptors than asked for are refused, every one closed");

    /* more than the control buffer holds: the kernel cuts it short (MSG_CTRUNC) */
    send_fds(sp[1], files, 6);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, 1, got, 1, 1000, &n, &nfds),
             HRDMA_ERR_TRUNCATED);
    CHECK_EQ(open_fds(), fds0);
    send_fds(sp[1], files, 1); /* the socket still works */
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, 1, got, 1, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(nfds, 1);
    close(got[0]);
    CHECK_EQ(open_fds(), fds0);
    OK("truncated control data is refused, what arrived closed");

    /* nothing arrives: the receive gives up at its timeout */
    t0 = now_ms();
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, sizeof(buf), got, 2, 150, &n, &nfds),
             HRDMA_ERR_TIMEOUT);
    took = now_ms() - t0;
    CHECK(took >= 140 && took < 1000);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, sizeof(buf), got, 2, 0, &n, &nfds),
             HRDMA_ERR_TIMEOUT);
    OK("a receive waits no longer than its timeout");

    /* signals every 20 ms: the wait goes on, and still ends at the timeout */
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm; /* no SA_RESTART: poll returns EINTR */
    CHECK_EQ(sigaction(SIGALRM, &sa, NULL), 0);
    memset(&it, 0, sizeof(it));
    it.it_interval.tv_usec = 20000;
    it.it_value.tv_usec = 20000;
    CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
    t0 = now_ms();
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, sizeof(buf), got, 2, 200, &n, &nfds),
             HRDMA_ERR_TIMEOUT);
    took = now_ms() - t0;
    CHECK(took >= 190 && took < 1000);
    /* a send into a full buffer, the peer reading nothing */
    t0 = now_ms();
    CHECK_EQ(hrdma_uds_send(sp[0], big, sizeof(big), 200), HRDMA_ERR_TIMEOUT);
    took = now_ms() - t0;
    CHECK(took >= 190 && took < 1000);
    memset(&it, 0, sizeof(it));
    CHECK_EQ(setitimer(ITIMER_REAL, &it, NULL), 0);
    close(sp[0]);
    close(sp[1]);
    OK("interrupted waits resume and end at the timeout (receive and send)");

    /* nobody there, or not a listener, or a path too long */
    fds0 = open_fds();
    CHECK_EQ(hrdma_uds_connect("/nonexistent/hrdma.sock", 1000, &fd), HRDMA_ERR_UNREACHABLE);
    CHECK_EQ(hrdma_uds_connect(file_path, 1000, &fd), HRDMA_ERR_UNREACHABLE);
    {
        char longp[200];
        memset(longp, 'a', sizeof(longp) - 1);
        longp[0] = '/';
        longp[sizeof(longp) - 1] = '\0';
        CHECK_EQ(hrdma_uds_connect(longp, 1000, &fd), HRDMA_ERR_INVALID);
    }
    CHECK_EQ(hrdma_uds_connect(NULL, 1000, &fd), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_uds_recv(-1, buf, 1, got, 1, 0, &n, &nfds), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_uds_recv(0, buf, 1, got, HRDMA_UDS_MAX_FDS + 1, 0, &n, &nfds),
             HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_uds_sockets(), 0);
    CHECK_EQ(open_fds(), fds0);
    OK("no listener, a bad path, bad arguments: refused, nothing left open");

    /* a listener that never accepts: its backlog fills, the next connect times out */
    close(lst);
    lst = listen_at(sock_path, 0);
    {
        int held[8], k = 0, st = HRDMA_OK;

        while (k < 8) {
            t0 = now_ms();
            st = hrdma_uds_connect(sock_path, 150, &held[k]);
            took = now_ms() - t0;
            if (st != HRDMA_OK) {
                break;
            }
            k++;
        }
        CHECK_EQ(st, HRDMA_ERR_TIMEOUT);
        CHECK(took >= 100 && took < 1000);
        CHECK_EQ(hrdma_uds_sockets(), k);
        while (k > 0) {
            CHECK_EQ(hrdma_uds_close(held[--k]), HRDMA_OK);
        }
    }
    close(lst);
    CHECK_EQ(hrdma_uds_sockets(), 0);
    CHECK_EQ(open_fds(), fds0 - 1);
    OK("a connect to a full backlog ends at its timeout");

    /* both ends ours: a pair, descriptors sent with the first of several bytes */
    CHECK_EQ(hrdma_uds_pair(&sp[0], &sp[1]), HRDMA_OK);
    CHECK_EQ(hrdma_uds_sockets(), 2);
    CHECK_EQ(hrdma_uds_send_fds(sp[1], "abc", 3, files, 2, 1000), HRDMA_OK);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf, 1, got, 2, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(n, 1);
    CHECK_EQ(nfds, 2);
    CHECK_EQ(hrdma_uds_recv(sp[0], buf + 1, 2, got + 2, 2, 1000, &n, &nfds), HRDMA_OK);
    CHECK_EQ(n, 2);
    CHECK_EQ(nfds, 0);
    CHECK(memcmp(buf, "abc", 3) == 0);
    close(got[0]);
    close(got[1]);
    CHECK_EQ(hrdma_uds_send_fds(sp[1], "", 0, files, 1, 1000), HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_uds_send_fds(sp[1], "x", 1, files, HRDMA_UDS_MAX_FDS + 1, 1000),
             HRDMA_ERR_INVALID);
    CHECK_EQ(hrdma_uds_close(sp[0]), HRDMA_OK);
    CHECK_EQ(hrdma_uds_close(sp[1]), HRDMA_OK);
    CHECK_EQ(hrdma_uds_sockets(), 0);
    CHECK_EQ(open_fds(), fds0 - 1);
    OK("a pair: descriptors sent with the first bytes, the rest after them");

    for (i = 0; i < 6; i++) {
        close(files[i]);
    }
    return 0;
}
