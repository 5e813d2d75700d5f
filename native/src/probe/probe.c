/*
 * Device probe over libibverbs: one line per (device, port). Works, and
 * prints nothing, when the host has no RDMA device.
 */
#include "hrdma_int.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <infiniband/verbs.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/* Appends to buf like snprintf, counting what would be needed. */
typedef struct {
    char  *buf;
    size_t len;
    size_t used; /* bytes needed so far, without the NUL */
} hrdma_probe_out_t;

static void __attribute__((format(printf, 2, 3)))
hrdma_probe_printf(hrdma_probe_out_t *out, const char *fmt, ...)
{
    size_t room = (out->used < out->len) ? out->len - out->used : 0;
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf((room > 0) ? out->buf + out->used : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0) {
        out->used += (size_t)n;
    }
}

static const char *hrdma_probe_width_str(uint8_t width)
{
    switch (width) {
    case 1:  return "1x";
    case 2:  return "4x";
    case 4:  return "8x";
    case 8:  return "12x";
    case 16: return "2x";
    default: return "?";
    }
}

static int hrdma_probe_width_lanes(uint8_t width)
{
    switch (width) {
    case 1:  return 1;
    case 2:  return 4;
    case 4:  return 8;
    case 8:  return 12;
    case 16: return 2;
    default: return 0;
    }
}

/* Name and per-lane rate in Gb/s of an active_speed value. */
static const char *hrdma_probe_speed(uint8_t speed, double *lane_gbps_p)
{
    switch (speed) {
    case 1:   *lane_gbps_p = 2.5;   return "SDR";
    case 2:   *lane_gbps_p = 5.0;   return "DDR";
    case 4:   *lane_gbps_p = 10.0;  return "QDR";
    case 8:   *lane_gbps_p = 10.0;  return "FDR10";
    case 16:  *lane_gbps_p = 14.0625; return "FDR";
    case 32:  *lane_gbps_p = 25.78125; return "EDR";
    case 64:  *lane_gbps_p = 53.125; return "HDR";
    case 128: *lane_gbps_p = 106.25; return "NDR";
    default:  *lane_gbps_p = 0.0;   return "?";
    }
}

static const char *hrdma_probe_link_layer_str(uint8_t link_layer)
{
    switch (link_layer) {
    case IBV_LINK_LAYER_INFINIBAND:  return "InfiniBand";
    case IBV_LINK_LAYER_ETHERNET:    return "Ethernet";
    case IBV_LINK_LAYER_UNSPECIFIED: return "InfiniBand";
    default:                         return "?";
    }
}

static int hrdma_probe_mtu_bytes(enum ibv_mtu mtu)
{
    return (mtu >= IBV_MTU_256 && mtu <= IBV_MTU_4096) ? (128 << mtu) : 0;
}

/* Reads the netdev bound to GID index 0 from sysfs, or "" when absent. */
static void hrdma_probe_netdev(const char *dev, int port, char *ifname,
                               size_t len)
{
    char path[256];
    FILE *f;

    ifname[0] = '\0';
    snprintf(path, sizeof(path),
             "/sys/class/infiniband/%s/ports/%d/gid_attrs/ndevs/0", dev, port);
    f = fopen(path, "r");
    if (f == NULL) {
        return;
    }
    if (fgets(ifname, (int)len, f) == NULL) {
        ifname[0] = '\0';
    }
    fclose(f);
    ifname[strcspn(ifname, "\r\n")] = '\0';
}

static void hrdma_probe_ipv4(const char *ifname, char *addr, size_t len)
{
    struct ifaddrs *ifa_list, *ifa;

    addr[0] = '\0';
    if ((ifname[0] == '\0') || (getifaddrs(&ifa_list) != 0)) {
        return;
    }
    for (ifa = ifa_list; ifa != NULL; ifa = ifa->ifa_next) {
        if ((ifa->ifa_addr != NULL) && (ifa->ifa_addr->sa_family == AF_INET) &&
            (strcmp(ifa->ifa_name, ifname) == 0)) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)ifa->ifa_addr)->sin_addr,
                      addr, (socklen_t)len);
            break;
        }
    }
    freeifaddrs(ifa_list);
}

static void hrdma_probe_port(hrdma_probe_out_t *out, struct ibv_context *vctx,
                             const char *dev, int port)
{
    struct ibv_port_attr attr;
    union ibv_gid gid;
    char gid_str[INET6_ADDRSTRLEN] = "-";
    char ifname[IF_NAMESIZE + 1];
    char ipv4[INET_ADDRSTRLEN];
    const char *speed;
    double lane_gbps;

    memset(&attr, 0, sizeof(attr));
    if (ibv_query_port(vctx, (uint8_t)port, &attr) != 0) {
        hrdma_probe_printf(out, "device=%s port=%d state=UNKNOWN\n", dev, port);
        return;
    }
    if ((ibv_query_gid(vctx, (uint8_t)port, 0, &gid) == 0) &&
        (inet_ntop(AF_INET6, gid.raw, gid_str, sizeof(gid_str)) == NULL)) {
        strcpy(gid_str, "-");
    }
    hrdma_probe_netdev(dev, port, ifname, sizeof(ifname));
    hrdma_probe_ipv4(ifname, ipv4, sizeof(ipv4));
    speed = hrdma_probe_speed(attr.active_speed, &lane_gbps);
    hrdma_probe_printf(out,
                       "device=%s port=%d state=%s link_layer=%s "
                       "rate_gbps=%.1f width=%s speed=%s mtu=%d gid0=%s "
                       "netdev=%s ipv4=%s\n",
                       dev, port, ibv_port_state_str(attr.state),
                       hrdma_probe_link_layer_str(attr.link_layer),
                       lane_gbps * hrdma_probe_width_lanes(attr.active_width),
                       hrdma_probe_width_str(attr.active_width), speed,
                       hrdma_probe_mtu_bytes(attr.active_mtu), gid_str,
                       (ifname[0] != '\0') ? ifname : "-",
                       (ipv4[0] != '\0') ? ipv4 : "-");
}

int hrdma_probe_devices(char *buf, size_t buf_len, size_t *needed_p)
{
    hrdma_probe_out_t out = {.buf = buf, .len = buf_len, .used = 0};
    struct ibv_device **devs;
    int num_devs = 0, i, port;

    if ((buf == NULL) && (buf_len > 0)) {
        return HRDMA_ERR_INVALID;
    }
    devs = ibv_get_device_list(&num_devs);
    for (i = 0; (devs != NULL) && (i < num_devs); i++) {
        const char *name = ibv_get_device_name(devs[i]);
        struct ibv_context *vctx = ibv_open_device(devs[i]);
        struct ibv_device_attr dattr;

        if (vctx == NULL) {
            hrdma_probe_printf(&out, "device=%s port=- state=UNAVAILABLE\n",
                               name);
            continue;
        }
        if (ibv_query_device(vctx, &dattr) == 0) {
            for (port = 1; port <= dattr.phys_port_cnt; port++) {
                hrdma_probe_port(&out, vctx, name, port);
            }
        }
        ibv_close_device(vctx);
    }
    if (devs != NULL) {
        ibv_free_device_list(devs);
    }

    if (needed_p != NULL) {
        *needed_p = out.used + 1;
    }
    if (out.used + 1 > buf_len) {
        if (buf_len > 0) {
            buf[buf_len - 1] = '\0';
        }
        return HRDMA_ERR_TRUNCATED;
    }
    buf[out.used] = '\0';
    return HRDMA_OK;
}
