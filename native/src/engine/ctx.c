/*
 * UCP context: configuration checks, creation, counters, info.
 */
#include "engine_int.h"

#include <ctype.h>
#include <signal.h>
#include <ucm/api/ucm.h>
#include <ucs/debug/debug.h>
#include <ucs/config/global_opts.h>
#include <ucs/config/parser.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

hrdma_counters_t hrdma_process_count;
static atomic_uint_fast64_t hrdma_process_contexts;

void hrdma_restore_signal_handlers(void)
{
    unsigned i;
    int debug_taken = ucs_global_opts.debug_signo > 0;

    /* libucs took the UCX_ERROR_SIGNALS while it loaded, unless errors are
     * not handled at all; libhrdma-preload empties the list unless the user
     * set it. Only the signals UCX took are given back (UCX warns about any
     * other). */
    if (ucs_global_opts.handle_errors != 0) {
        for (i = 0; i < ucs_global_opts.error_signals.count; i++) {
            ucs_debug_disable_signal(ucs_global_opts.error_signals.signals[i]);
            if (ucs_global_opts.error_signals.signals[i] ==
                (int)ucs_global_opts.debug_signo) {
                debug_taken = 0; /* given back already */
            }
        }
    }
    /* libucs also took UCX_DEBUG_SIGNO (SIGHUP by default) for its debug
     * mode, whether errors are handled or not; libhrdma-preload sets it to 0
     * unless the user set it. Given back where the user did not ask for it
     * (a process that loaded libucs without the preload): a JVM's SIGHUP
     * runs its shutdown hooks. */
    if (debug_taken && (getenv("UCX_DEBUG_SIGNO") == NULL)) {
        ucs_debug_disable_signal((int)ucs_global_opts.debug_signo);
    }
}

const char *hrdma_ucx_version(void)
{
    return ucp_get_version_string();
}

int hrdma_ucx_memory_hooks(void)
{
    return ucm_global_opts.enable_events ? 1 : 0;
}

static int hrdma_config_name_valid(const char *name)
{
    const char *p;

    if (*name == '\0') {
        return 0;
    }
    for (p = name; *p != '\0'; p++) {
        if (!(isupper((unsigned char)*p) || isdigit((unsigned char)*p) ||
              (*p == '_'))) {
            return 0;
        }
    }
    return 1;
}

static int hrdma_config_value_valid(const char *name, const char *value)
{
    const char *p;

    for (p = value; *p != '\0'; p++) {
        if (iscntrl((unsigned char)*p)) {
            return 0;
        }
    }
    /* MEASURED.md: a connection-manager list without tcp (e.g. "rdmacm"
     * alone) crashes UCX 1.13 on a host without a working rdmacm. */
    if ((strcmp(name, "SOCKADDR_TLS_PRIORITY") == 0) &&
        (strstr(value, "tcp") == NULL)) {
        return 0;
    }
    return 1;
}

/* Checks every "NAME=value" entry, then applies them to config. */
static int hrdma_config_apply(ucp_config_t *config, const char *ucx_config)
{
    char *copy, *entry, *save = NULL, *eq;
    ucs_status_t ucs;
    int pass, status = HRDMA_OK;

    copy = strdup(ucx_config);
    if (copy == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    /* Pass 0 validates everything before UCX sees anything; pass 1 applies. */
    for (pass = 0; (pass < 2) && (status == HRDMA_OK); pass++) {
        strcpy(copy, ucx_config);
        for (entry = strtok_r(copy, ";", &save); entry != NULL;
             entry = strtok_r(NULL, ";", &save)) {
            if (entry[strspn(entry, " ")] == '\0') {
                continue;
            }
            eq = strchr(entry, '=');
            if (eq == NULL) {
                hrdma_log_error("ucx config entry '%s' lacks '=': %s", entry,
                                hrdma_status_str(HRDMA_ERR_INVALID));
                status = HRDMA_ERR_INVALID;
                break;
            }
            *eq = '\0';
            if (pass == 0) {
                if (!hrdma_config_name_valid(entry) ||
                    !hrdma_config_value_valid(entry, eq + 1)) {
                    hrdma_log_error("bad ucx config entry '%s=%s': %s", entry,
                                    eq + 1,
                                    hrdma_status_str(HRDMA_ERR_INVALID));
                    status = HRDMA_ERR_INVALID;
                    break;
                }
                continue;
            }
            ucs = ucp_config_modify(config, entry, eq + 1);
            if (ucs != UCS_OK) {
                hrdma_log_error("ucx config '%s=%s' rejected: %s", entry,
                                eq + 1, ucs_status_string(ucs));
                status = HRDMA_ERR_INVALID;
                break;
            }
        }
    }
    free(copy);
    return status;
}

/* Whether name occurs in text as a whole word: after a newline or blank,
 * before '=', ',' or a line end. */
static int hrdma_config_text_has_name(const char *text, const char *name)
{
    size_t len = strlen(name);
    const char *p;

    for (p = strstr(text, name); p != NULL; p = strstr(p + 1, name)) {
        char before = (p == text) ? '\n' : p[-1];
        char after  = p[len];

        if (((before == '\n') || (before == ' ')) &&
            ((after == '=') || (after == ',') || (after == '\n'))) {
            return 1;
        }
    }
    return 0;
}

/* ucp_config_modify accepts any name (it caches unknown ones for the
 * transports), so names are checked against every option UCX knows once
 * ucp_init has loaded the transport modules. */
static int hrdma_config_names_known(const char *ucx_config)
{
    char *all = NULL, *copy, *entry, *save = NULL, *eq, *needle;
    size_t all_len = 0;
    int status = HRDMA_OK;
    FILE *f;

    f = open_memstream(&all, &all_len);
    if (f == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    fputc('\n', f);
    /* With DOC, names a table inherits ("# inherits:  UCX_MM_ERROR_HANDLING,
     * ...") are listed too; those are valid settings. */
    ucs_config_parser_print_all_opts(f, "UCX_", UCS_CONFIG_PRINT_CONFIG |
                                     UCS_CONFIG_PRINT_HIDDEN |
                                     UCS_CONFIG_PRINT_DOC,
                                     &ucs_config_global_list);
    fclose(f);
    copy   = strdup(ucx_config);
    needle = malloc(strlen(ucx_config) + 8);
    if ((copy == NULL) || (needle == NULL) || (all == NULL)) {
        status = HRDMA_ERR_NOMEM;
        goto out;
    }
    for (entry = strtok_r(copy, ";", &save); entry != NULL;
         entry = strtok_r(NULL, ";", &save)) {
        eq = strchr(entry, '=');
        if (eq == NULL) {
            continue;
        }
        *eq = '\0';
        sprintf(needle, "UCX_%s", entry);
        if (!hrdma_config_text_has_name(all, needle)) {
            hrdma_log_error("unknown ucx config name '%s': %s", entry,
                            hrdma_status_str(HRDMA_ERR_INVALID));
            status = HRDMA_ERR_INVALID;
            break;
        }
    }
out:
    free(needle);
    free(copy);
    free(all);
    return status;
}

int hrdma_ctx_create(const char *ucx_config, hrdma_ctx_t **ctx_p)
{
    ucp_params_t params;
    ucp_config_t *config;
    ucs_status_t ucs;
    hrdma_ctx_t *ctx;
    int status;

    if (ctx_p == NULL) {
        return HRDMA_ERR_INVALID;
    }
    ctx = calloc(1, sizeof(*ctx));
    if (ctx == NULL) {
        return HRDMA_ERR_NOMEM;
    }

    ucs = ucp_config_read(NULL, NULL, &config);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_config_read failed: %s", ucs_status_string(ucs));
        status = HRDMA_ERR_INVALID;
        goto err_free;
    }
    if (ucx_config != NULL) {
        status = hrdma_config_apply(config, ucx_config);
        if (status != HRDMA_OK) {
            goto err_release_config;
        }
    }

    memset(&params, 0, sizeof(params));
    params.field_mask   = UCP_PARAM_FIELD_FEATURES |
                          UCP_PARAM_FIELD_REQUEST_SIZE;
    params.features     = UCP_FEATURE_AM | UCP_FEATURE_RMA |
                          UCP_FEATURE_STREAM | UCP_FEATURE_WAKEUP;
    params.request_size = sizeof(hrdma_req_t);
    ucs = ucp_init(&params, config, &ctx->ucp_ctx);
    if (ucs != UCS_OK) {
        hrdma_log_error("ucp_init failed: %s", ucs_status_string(ucs));
        status = (ucs == UCS_ERR_NO_DEVICE || ucs == UCS_ERR_NO_ELEM ||
                  ucs == UCS_ERR_INVALID_PARAM) ? HRDMA_ERR_INVALID
                                                : hrdma_status_from_ucs(ucs);
        goto err_release_config;
    }
    ucp_config_release(config);
    if (ucx_config != NULL) {
        status = hrdma_config_names_known(ucx_config);
        if (status != HRDMA_OK) {
            ucp_cleanup(ctx->ucp_ctx);
            goto err_free;
        }
    }
    atomic_fetch_add(&hrdma_process_contexts, 1);
    *ctx_p = ctx;
    return HRDMA_OK;

err_release_config:
    ucp_config_release(config);
err_free:
    free(ctx);
    return status;
}

int hrdma_ctx_destroy(hrdma_ctx_t *ctx)
{
    if (ctx == NULL) {
        return HRDMA_ERR_INVALID;
    }
    /* MEASURED.md: registrations (and workers with their rkeys) must go
     * before ucp_cleanup or UCX asserts. */
    if ((atomic_load(&ctx->count.regions) != 0) ||
        (atomic_load(&ctx->count.workers) != 0)) {
        return HRDMA_ERR_BUSY;
    }
    ucp_cleanup(ctx->ucp_ctx);
    free(ctx);
    atomic_fetch_sub(&hrdma_process_contexts, 1);
    return HRDMA_OK;
}

static void hrdma_counters_read(hrdma_counters_t *c, hrdma_ctx_stats_t *stats)
{
    stats->bytes_registered = atomic_load(&c->bytes_registered);
    stats->regions          = atomic_load(&c->regions);
    stats->endpoints        = atomic_load(&c->endpoints);
    stats->workers          = atomic_load(&c->workers);
}

void hrdma_ctx_stats(const hrdma_ctx_t *ctx, hrdma_ctx_stats_t *stats)
{
    /* atomic_load wants non-const */
    hrdma_counters_read(&((hrdma_ctx_t *)ctx)->count, stats);
}

uint64_t hrdma_process_stats(hrdma_ctx_stats_t *stats)
{
    hrdma_counters_read(&hrdma_process_count, stats);
    return atomic_load(&hrdma_process_contexts);
}

int hrdma_ctx_info(hrdma_ctx_t *ctx, char *buf, size_t buf_len)
{
    char *text = NULL;
    size_t text_len = 0;
    FILE *f;

    if ((ctx == NULL) || (buf == NULL) || (buf_len == 0)) {
        return HRDMA_ERR_INVALID;
    }
    f = open_memstream(&text, &text_len);
    if (f == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    ucp_context_print_info(ctx->ucp_ctx, f);
    fclose(f);
    snprintf(buf, buf_len, "%s", (text != NULL) ? text : "");
    free(text);
    return HRDMA_OK;
}
