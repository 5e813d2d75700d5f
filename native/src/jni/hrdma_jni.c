/*
 * JNI glue for org.hdfsrdma.nativelib.Jni: the only file that includes
 * <jni.h>. Natives take and return longs (handles, addresses); fast-path
 * natives return an hrdma_status_t and Java builds the exception, slow-path
 * natives (create, map, unpack) throw NativeException themselves.
 *
 * Worker callbacks are delivered as upcalls on the Java object given to
 * workerCreate0. They run on the thread that drives the worker (inside
 * workerProgress0, or inside a close that cancels operations).
 */
#include <jni.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hrdma/hrdma.h"

#define JNI_CLASS(name) Java_org_hdfsrdma_nativelib_Jni_##name

static JavaVM   *g_vm;
static jclass    g_native_exception;   /* org.hdfsrdma.nativelib.NativeException */
static jmethodID g_native_exception_ctor;
static jmethodID g_on_conn_request;
static jmethodID g_on_am;
static jmethodID g_on_recv_done;
static jmethodID g_on_op_done;
static jmethodID g_on_ep_error;

typedef struct {
    jobject    callbacks;  /* global ref to a WorkerCallbacks */
    jlongArray out;        /* global ref, long[3]: dst address, mem, cookie */
    hrdma_worker_t *worker;
} hrdma_jni_worker_t;

/* Throws NativeException("what: status text"), with errno's text appended
 * in parentheses when err is not 0. */
static void hrdma_jni_throw_errno(JNIEnv *env, int status, const char *what,
                                  int err)
{
    char msg[512], reason[128];
    jstring jmsg;
    jobject ex;

    if (err != 0) {
        /* GNU strerror_r: returns the text, not always in reason */
        snprintf(msg, sizeof(msg), "%s: %s (%s)", what,
                 hrdma_status_str(status),
                 strerror_r(err, reason, sizeof(reason)));
    } else {
        snprintf(msg, sizeof(msg), "%s: %s", what, hrdma_status_str(status));
    }
    jmsg = (*env)->NewStringUTF(env, msg);
    if (jmsg == NULL) {
        return; /* OutOfMemoryError pending */
    }
    ex = (*env)->NewObject(env, g_native_exception, g_native_exception_ctor,
                           jmsg, (jint)status);
    if (ex != NULL) {
        (*env)->Throw(env, (jthrowable)ex);
    }
}

static void hrdma_jni_throw(JNIEnv *env, int status, const char *what)
{
    hrdma_jni_throw_errno(env, status, what, 0);
}

static JNIEnv *hrdma_jni_env(void)
{
    JNIEnv *env = NULL;
    if ((*g_vm)->GetEnv(g_vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) {
        return NULL;
    }
    return env;
}

/* An exception thrown by a callback must not leak into the next JNI call. */
static int hrdma_jni_upcall_failed(JNIEnv *env)
{
    if ((*env)->ExceptionCheck(env)) {
        (*env)->ExceptionDescribe(env);
        (*env)->ExceptionClear(env);
        return 1;
    }
    return 0;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
    JNIEnv *env;
    jclass cls;

    (void)reserved;
    g_vm = vm;
    /* HotSpot raises SIGSEGV on purpose (implicit null checks, safepoints):
     * UCX's handler must not see those. */
    hrdma_restore_signal_handlers();
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) {
        return JNI_ERR;
    }
    cls = (*env)->FindClass(env, "org/hdfsrdma/nativelib/NativeException");
    if (cls == NULL) {
        return JNI_ERR;
    }
    g_native_exception = (*env)->NewGlobalRef(env, cls);
    g_native_exception_ctor = (*env)->GetMethodID(env, cls, "<init>",
                                                  "(Ljava/lang/String;I)V");
    cls = (*env)->FindClass(env, "org/hdfsrdma/nativelib/WorkerCallbacks");
    if (cls == NULL || g_native_exception_ctor == NULL) {
        return JNI_ERR;
    }
    g_on_conn_request = (*env)->GetMethodID(env, cls, "onConnRequest",
                                            "(JJLjava/lang/String;)V");
    g_on_am        = (*env)->GetMethodID(env, cls, "onAm", "(JIJI[J)I");
    g_on_recv_done = (*env)->GetMethodID(env, cls, "onRecvDone", "(JJIJ)V");
    g_on_op_done   = (*env)->GetMethodID(env, cls, "onOpDone", "(JJIJ)V");
    g_on_ep_error  = (*env)->GetMethodID(env, cls, "onEpError", "(JI)V");
    if (!g_on_conn_request || !g_on_am || !g_on_recv_done || !g_on_op_done ||
        !g_on_ep_error) {
        return JNI_ERR;
    }
    return JNI_VERSION_1_8;
}

/* ------------------------------------------------------------ library -- */

JNIEXPORT jint JNICALL JNI_CLASS(abiVersion0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return HRDMA_ABI_VERSION;
}

JNIEXPORT jstring JNICALL JNI_CLASS(ucxVersion0)(JNIEnv *env, jclass cls)
{
    (void)cls;
    return (*env)->NewStringUTF(env, hrdma_ucx_version());
}

JNIEXPORT jboolean JNICALL JNI_CLASS(ucxMemoryHooks0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return hrdma_ucx_memory_hooks() ? JNI_TRUE : JNI_FALSE;
}

JNIEXPORT jstring JNICALL JNI_CLASS(statusString0)(JNIEnv *env, jclass cls,
                                                   jint status)
{
    (void)cls;
    return (*env)->NewStringUTF(env, hrdma_status_str(status));
}

JNIEXPORT jstring JNICALL JNI_CLASS(probe0)(JNIEnv *env, jclass cls)
{
    size_t needed = 0, cap = 4096;
    char *buf;
    jstring out;
    int st;

    (void)cls;
    for (;;) {
        buf = malloc(cap);
        if (buf == NULL) {
            hrdma_jni_throw(env, HRDMA_ERR_NOMEM, "probe");
            return NULL;
        }
        st = hrdma_probe_devices(buf, cap, &needed);
        if (st != HRDMA_ERR_TRUNCATED || needed <= cap) {
            break;
        }
        free(buf);
        cap = needed + 1;
    }
    if (st < 0) {
        free(buf);
        hrdma_jni_throw(env, st, "probe devices");
        return NULL;
    }
    out = (*env)->NewStringUTF(env, buf);
    free(buf);
    return out;
}

/* ------------------------------------------------------------ context -- */

JNIEXPORT jlong JNICALL JNI_CLASS(ctxCreate0)(JNIEnv *env, jclass cls,
                                              jstring jcfg)
{
    const char *cfg = NULL;
    hrdma_ctx_t *ctx = NULL;
    int st;

    (void)cls;
    if (jcfg != NULL) {
        cfg = (*env)->GetStringUTFChars(env, jcfg, NULL);
        if (cfg == NULL) {
            return 0;
        }
    }
    st = hrdma_ctx_create(cfg, &ctx);
    if (jcfg != NULL) {
        (*env)->ReleaseStringUTFChars(env, jcfg, cfg);
    }
    if (st < 0) {
        hrdma_jni_throw(env, st, "create ucx context");
        return 0;
    }
    return (jlong)(uintptr_t)ctx;
}

JNIEXPORT jint JNICALL JNI_CLASS(ctxDestroy0)(JNIEnv *env, jclass cls,
                                              jlong ctx)
{
    (void)env; (void)cls;
    return hrdma_ctx_destroy((hrdma_ctx_t *)(uintptr_t)ctx);
}

JNIEXPORT void JNICALL JNI_CLASS(ctxStats0)(JNIEnv *env, jclass cls,
                                            jlong ctx, jlongArray out)
{
    hrdma_ctx_stats_t s;
    jlong v[4];

    (void)cls;
    hrdma_ctx_stats((hrdma_ctx_t *)(uintptr_t)ctx, &s);
    v[0] = (jlong)s.bytes_registered;
    v[1] = (jlong)s.regions;
    v[2] = (jlong)s.endpoints;
    v[3] = (jlong)s.workers;
    (*env)->SetLongArrayRegion(env, out, 0, 4, v);
}

JNIEXPORT void JNICALL JNI_CLASS(processStats0)(JNIEnv *env, jclass cls,
                                                jlongArray out)
{
    hrdma_ctx_stats_t s;
    jlong v[5];

    (void)cls;
    v[4] = (jlong)hrdma_process_stats(&s);
    v[0] = (jlong)s.bytes_registered;
    v[1] = (jlong)s.regions;
    v[2] = (jlong)s.endpoints;
    v[3] = (jlong)s.workers;
    (*env)->SetLongArrayRegion(env, out, 0, 5, v);
}

JNIEXPORT jstring JNICALL JNI_CLASS(ctxInfo0)(JNIEnv *env, jclass cls,
                                              jlong ctx)
{
    size_t cap = 1 << 16;
    char *buf = malloc(cap);
    jstring out;
    int st;

    (void)cls;
    if (buf == NULL) {
        hrdma_jni_throw(env, HRDMA_ERR_NOMEM, "context info");
        return NULL;
    }
    st = hrdma_ctx_info((hrdma_ctx_t *)(uintptr_t)ctx, buf, cap);
    if (st < 0) {
        free(buf);
        hrdma_jni_throw(env, st, "context info");
        return NULL;
    }
    out = (*env)->NewStringUTF(env, buf);
    free(buf);
    return out;
}

/* ------------------------------------------------------------- memory -- */

JNIEXPORT jlong JNICALL JNI_CLASS(memMap0)(JNIEnv *env, jclass cls, jlong ctx,
                                           jlong length)
{
    hrdma_mem_t *mem = NULL;
    int st;

    (void)cls;
    if (length <= 0) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "map memory");
        return 0;
    }
    st = hrdma_mem_map((hrdma_ctx_t *)(uintptr_t)ctx, (size_t)length, &mem);
    if (st < 0) {
        hrdma_jni_throw(env, st, "map memory");
        return 0;
    }
    return (jlong)(uintptr_t)mem;
}

JNIEXPORT jobject JNICALL JNI_CLASS(memBuffer0)(JNIEnv *env, jclass cls,
                                                jlong jmem)
{
    hrdma_mem_t *mem = (hrdma_mem_t *)(uintptr_t)jmem;

    (void)cls;
    return (*env)->NewDirectByteBuffer(env, hrdma_mem_address(mem),
                                       (jlong)hrdma_mem_length(mem));
}

JNIEXPORT jlong JNICALL JNI_CLASS(memAddress0)(JNIEnv *env, jclass cls,
                                               jlong jmem)
{
    (void)env; (void)cls;
    return (jlong)(uintptr_t)hrdma_mem_address((hrdma_mem_t *)(uintptr_t)jmem);
}

JNIEXPORT jbyteArray JNICALL JNI_CLASS(memPackRkey0)(JNIEnv *env, jclass cls,
                                                     jlong jmem)
{
    hrdma_mem_t *mem = (hrdma_mem_t *)(uintptr_t)jmem;
    size_t len = 0, cap = 1024;
    void *buf = NULL;
    jbyteArray out;
    int st;

    (void)cls;
    for (;;) {
        buf = malloc(cap);
        if (buf == NULL) {
            hrdma_jni_throw(env, HRDMA_ERR_NOMEM, "pack rkey");
            return NULL;
        }
        st = hrdma_mem_pack_rkey(mem, buf, cap, &len);
        if (st != HRDMA_ERR_TRUNCATED || len <= cap) {
            break;
        }
        free(buf);
        cap = len;
    }
    if (st < 0) {
        free(buf);
        hrdma_jni_throw(env, st, "pack rkey");
        return NULL;
    }
    out = (*env)->NewByteArray(env, (jsize)len);
    if (out != NULL) {
        (*env)->SetByteArrayRegion(env, out, 0, (jsize)len, buf);
    }
    free(buf);
    return out;
}

JNIEXPORT jint JNICALL JNI_CLASS(memUnmap0)(JNIEnv *env, jclass cls,
                                            jlong mem)
{
    (void)env; (void)cls;
    return hrdma_mem_unmap((hrdma_mem_t *)(uintptr_t)mem);
}

/* ----------------------------------------------------- worker upcalls -- */

static void hrdma_jni_on_conn_request(void *arg, uint64_t listener_token,
                                      hrdma_conn_request_t req,
                                      const char *peer)
{
    hrdma_jni_worker_t *jw = arg;
    JNIEnv *env = hrdma_jni_env();
    jstring jpeer;

    if (env == NULL) {
        hrdma_conn_reject(jw->worker, listener_token, req);
        return;
    }
    jpeer = (*env)->NewStringUTF(env, peer != NULL ? peer : "");
    (*env)->CallVoidMethod(env, jw->callbacks, g_on_conn_request,
                           (jlong)listener_token, (jlong)(uintptr_t)req, jpeer);
    hrdma_jni_upcall_failed(env);
    if (jpeer != NULL) {
        (*env)->DeleteLocalRef(env, jpeer);
    }
}

static int hrdma_jni_on_am(void *arg, uint64_t ep_token, uint16_t am_id,
                           size_t length, int32_t page_offset, void **dst_p,
                           hrdma_mem_t **dst_mem_p, uint64_t *recv_cookie_p)
{
    hrdma_jni_worker_t *jw = arg;
    JNIEnv *env = hrdma_jni_env();
    jlong out[3];
    jint st;

    if (env == NULL) {
        return HRDMA_ERR_IO;
    }
    st = (*env)->CallIntMethod(env, jw->callbacks, g_on_am, (jlong)ep_token,
                               (jint)am_id, (jlong)length, (jint)page_offset,
                               jw->out);
    if (hrdma_jni_upcall_failed(env)) {
        return HRDMA_ERR_IO;
    }
    if (st < 0) {
        return st;
    }
    (*env)->GetLongArrayRegion(env, jw->out, 0, 3, out);
    *dst_p         = (void *)(uintptr_t)out[0];
    *dst_mem_p     = (hrdma_mem_t *)(uintptr_t)out[1];
    *recv_cookie_p = (uint64_t)out[2];
    return HRDMA_OK;
}

static void hrdma_jni_on_recv_done(void *arg, uint64_t ep_token,
                                   uint64_t cookie, int status, size_t length)
{
    hrdma_jni_worker_t *jw = arg;
    JNIEnv *env = hrdma_jni_env();

    if (env == NULL) {
        return;
    }
    (*env)->CallVoidMethod(env, jw->callbacks, g_on_recv_done, (jlong)ep_token,
                           (jlong)cookie, (jint)status, (jlong)length);
    hrdma_jni_upcall_failed(env);
}

static void hrdma_jni_on_op_done(void *arg, uint64_t ep_token, uint64_t cookie,
                                 int status, size_t length)
{
    hrdma_jni_worker_t *jw = arg;
    JNIEnv *env = hrdma_jni_env();

    if (env == NULL) {
        return;
    }
    (*env)->CallVoidMethod(env, jw->callbacks, g_on_op_done, (jlong)ep_token,
                           (jlong)cookie, (jint)status, (jlong)length);
    hrdma_jni_upcall_failed(env);
}

static void hrdma_jni_on_ep_error(void *arg, uint64_t ep_token, int status)
{
    hrdma_jni_worker_t *jw = arg;
    JNIEnv *env = hrdma_jni_env();

    if (env == NULL) {
        return;
    }
    (*env)->CallVoidMethod(env, jw->callbacks, g_on_ep_error, (jlong)ep_token,
                           (jint)status);
    hrdma_jni_upcall_failed(env);
}

/* ------------------------------------------------------------- worker -- */

JNIEXPORT jlong JNICALL JNI_CLASS(workerCreate0)(JNIEnv *env, jclass cls,
                                                 jlong ctx, jobject callbacks)
{
    hrdma_worker_callbacks_t cb;
    hrdma_jni_worker_t *jw;
    jlongArray out;
    int st;

    (void)cls;
    jw = calloc(1, sizeof(*jw));
    if (jw == NULL) {
        hrdma_jni_throw(env, HRDMA_ERR_NOMEM, "create worker");
        return 0;
    }
    out = (*env)->NewLongArray(env, 3);
    if (out == NULL) {
        free(jw);
        return 0;
    }
    jw->callbacks = (*env)->NewGlobalRef(env, callbacks);
    jw->out       = (*env)->NewGlobalRef(env, out);

    memset(&cb, 0, sizeof(cb));
    cb.arg             = jw;
    cb.on_conn_request = hrdma_jni_on_conn_request;
    cb.on_am           = hrdma_jni_on_am;
    cb.on_recv_done    = hrdma_jni_on_recv_done;
    cb.on_op_done      = hrdma_jni_on_op_done;
    cb.on_ep_error     = hrdma_jni_on_ep_error;
    st = hrdma_worker_create((hrdma_ctx_t *)(uintptr_t)ctx, &cb, &jw->worker);
    if (st < 0) {
        (*env)->DeleteGlobalRef(env, jw->callbacks);
        (*env)->DeleteGlobalRef(env, jw->out);
        free(jw);
        hrdma_jni_throw(env, st, "create worker");
        return 0;
    }
    return (jlong)(uintptr_t)jw;
}

static hrdma_worker_t *hrdma_jni_worker(jlong w)
{
    return ((hrdma_jni_worker_t *)(uintptr_t)w)->worker;
}

JNIEXPORT jint JNICALL JNI_CLASS(workerDestroy0)(JNIEnv *env, jclass cls,
                                                 jlong w)
{
    hrdma_jni_worker_t *jw = (hrdma_jni_worker_t *)(uintptr_t)w;
    int st;

    (void)cls;
    st = hrdma_worker_destroy(jw->worker);
    if (st < 0) {
        return st;
    }
    (*env)->DeleteGlobalRef(env, jw->callbacks);
    (*env)->DeleteGlobalRef(env, jw->out);
    free(jw);
    return HRDMA_OK;
}

JNIEXPORT jint JNICALL JNI_CLASS(workerProgress0)(JNIEnv *env, jclass cls,
                                                  jlong w)
{
    (void)env; (void)cls;
    return hrdma_worker_progress(hrdma_jni_worker(w));
}

JNIEXPORT jint JNICALL JNI_CLASS(workerWait0)(JNIEnv *env, jclass cls, jlong w,
                                              jint timeout_ms)
{
    (void)env; (void)cls;
    return hrdma_worker_wait(hrdma_jni_worker(w), timeout_ms);
}

JNIEXPORT jint JNICALL JNI_CLASS(workerSignal0)(JNIEnv *env, jclass cls,
                                                jlong w)
{
    (void)env; (void)cls;
    return hrdma_worker_signal(hrdma_jni_worker(w));
}

/* ---------------------------------------------------------- listeners -- */

JNIEXPORT jlong JNICALL JNI_CLASS(listenerCreate0)(JNIEnv *env, jclass cls,
                                                   jlong w, jstring jip,
                                                   jint port, jlong token)
{
    hrdma_listener_t *l = NULL;
    const char *ip;
    int st;

    (void)cls;
    ip = (*env)->GetStringUTFChars(env, jip, NULL);
    if (ip == NULL) {
        return 0;
    }
    st = hrdma_listener_create(hrdma_jni_worker(w), ip, port, (uint64_t)token,
                               &l);
    (*env)->ReleaseStringUTFChars(env, jip, ip);
    if (st < 0) {
        hrdma_jni_throw(env, st, "listen");
        return 0;
    }
    return (jlong)(uintptr_t)l;
}

JNIEXPORT jint JNICALL JNI_CLASS(listenerPort0)(JNIEnv *env, jclass cls,
                                                jlong l)
{
    (void)env; (void)cls;
    return hrdma_listener_port((hrdma_listener_t *)(uintptr_t)l);
}

JNIEXPORT jint JNICALL JNI_CLASS(listenerDestroy0)(JNIEnv *env, jclass cls,
                                                   jlong l)
{
    (void)env; (void)cls;
    return hrdma_listener_destroy((hrdma_listener_t *)(uintptr_t)l);
}

JNIEXPORT jlong JNICALL JNI_CLASS(connAccept0)(JNIEnv *env, jclass cls,
                                               jlong w, jlong req, jlong token)
{
    hrdma_ep_t *ep = NULL;
    int st;

    (void)cls;
    st = hrdma_conn_accept(hrdma_jni_worker(w), (hrdma_conn_request_t)(uintptr_t)req,
                           (uint64_t)token, &ep);
    if (st < 0) {
        hrdma_jni_throw(env, st, "accept");
        return 0;
    }
    return (jlong)(uintptr_t)ep;
}

JNIEXPORT jint JNICALL JNI_CLASS(connReject0)(JNIEnv *env, jclass cls, jlong w,
                                              jlong listener_token, jlong req)
{
    (void)env; (void)cls;
    return hrdma_conn_reject(hrdma_jni_worker(w), (uint64_t)listener_token,
                             (hrdma_conn_request_t)(uintptr_t)req);
}

/* ---------------------------------------------------------- endpoints -- */

JNIEXPORT jlong JNICALL JNI_CLASS(epConnect0)(JNIEnv *env, jclass cls, jlong w,
                                              jstring jip, jint port,
                                              jlong token)
{
    hrdma_ep_t *ep = NULL;
    const char *ip;
    int st;

    (void)cls;
    ip = (*env)->GetStringUTFChars(env, jip, NULL);
    if (ip == NULL) {
        return 0;
    }
    st = hrdma_ep_connect(hrdma_jni_worker(w), ip, port, (uint64_t)token, &ep);
    (*env)->ReleaseStringUTFChars(env, jip, ip);
    if (st < 0) {
        hrdma_jni_throw(env, st, "connect");
        return 0;
    }
    return (jlong)(uintptr_t)ep;
}

#define EP(x)  ((hrdma_ep_t *)(uintptr_t)(x))
#define MEM(x) ((hrdma_mem_t *)(uintptr_t)(x))
#define PTR(x) ((void *)(uintptr_t)(x))

JNIEXPORT jint JNICALL JNI_CLASS(amSend0)(JNIEnv *env, jclass cls, jlong ep,
                                          jint id, jlong addr, jlong len,
                                          jlong mem, jlong placeAt,
                                          jlong cookie)
{
    (void)env; (void)cls;
    if (id < 0 || id > 0xffff || len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_ep_am_send_placed(EP(ep), (uint16_t)id, PTR(addr),
                                   (size_t)len, MEM(mem), (int64_t)placeAt,
                                   (uint64_t)cookie);
}

JNIEXPORT jlong JNICALL JNI_CLASS(rkeyUnpack0)(JNIEnv *env, jclass cls,
                                               jlong ep, jbyteArray packed)
{
    hrdma_rkey_t *rkey = NULL;
    jsize len = (*env)->GetArrayLength(env, packed);
    jbyte *bytes;
    int st;

    (void)cls;
    bytes = (*env)->GetByteArrayElements(env, packed, NULL);
    if (bytes == NULL) {
        return 0;
    }
    st = hrdma_rkey_unpack(EP(ep), bytes, (size_t)len, &rkey);
    (*env)->ReleaseByteArrayElements(env, packed, bytes, JNI_ABORT);
    if (st < 0) {
        hrdma_jni_throw(env, st, "unpack remote key");
        return 0;
    }
    return (jlong)(uintptr_t)rkey;
}

JNIEXPORT void JNICALL JNI_CLASS(rkeyDestroy0)(JNIEnv *env, jclass cls,
                                               jlong rkey)
{
    (void)env; (void)cls;
    hrdma_rkey_destroy((hrdma_rkey_t *)(uintptr_t)rkey);
}

JNIEXPORT jint JNICALL JNI_CLASS(put0)(JNIEnv *env, jclass cls, jlong ep,
                                       jlong addr, jlong len, jlong mem,
                                       jlong raddr, jlong rkey, jlong cookie)
{
    (void)env; (void)cls;
    if (len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_ep_put(EP(ep), PTR(addr), (size_t)len, MEM(mem),
                        (uint64_t)raddr, (hrdma_rkey_t *)(uintptr_t)rkey,
                        (uint64_t)cookie);
}

JNIEXPORT jint JNICALL JNI_CLASS(get0)(JNIEnv *env, jclass cls, jlong ep,
                                       jlong addr, jlong len, jlong mem,
                                       jlong raddr, jlong rkey, jlong cookie)
{
    (void)env; (void)cls;
    if (len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_ep_get(EP(ep), PTR(addr), (size_t)len, MEM(mem),
                        (uint64_t)raddr, (hrdma_rkey_t *)(uintptr_t)rkey,
                        (uint64_t)cookie);
}

JNIEXPORT jint JNICALL JNI_CLASS(flush0)(JNIEnv *env, jclass cls, jlong ep,
                                         jlong cookie)
{
    (void)env; (void)cls;
    return hrdma_ep_flush(EP(ep), (uint64_t)cookie);
}

JNIEXPORT jint JNICALL JNI_CLASS(streamSend0)(JNIEnv *env, jclass cls,
                                              jlong ep, jlong addr, jlong len,
                                              jlong mem, jlong cookie)
{
    (void)env; (void)cls;
    if (len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_ep_stream_send(EP(ep), PTR(addr), (size_t)len, MEM(mem),
                                (uint64_t)cookie);
}

/* Returns > 0: bytes received at once; 0: in progress (on_op_done follows);
 * < 0: an error status. */
JNIEXPORT jlong JNICALL JNI_CLASS(streamRecv0)(JNIEnv *env, jclass cls,
                                               jlong ep, jlong addr, jlong cap,
                                               jlong mem, jlong cookie)
{
    size_t received = 0;
    int st;

    (void)env; (void)cls;
    if (cap <= 0) {
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_ep_stream_recv(EP(ep), PTR(addr), (size_t)cap, MEM(mem),
                              (uint64_t)cookie, &received);
    if (st < 0) {
        return st;
    }
    if (st == HRDMA_INPROGRESS) {
        return 0;
    }
    return (jlong)received;
}

JNIEXPORT jint JNICALL JNI_CLASS(epClose0)(JNIEnv *env, jclass cls, jlong ep,
                                           jboolean force, jlong cookie)
{
    (void)env; (void)cls;
    return hrdma_ep_close(EP(ep), force ? 1 : 0, (uint64_t)cookie);
}

JNIEXPORT void JNICALL JNI_CLASS(epDestroy0)(JNIEnv *env, jclass cls, jlong ep)
{
    (void)env; (void)cls;
    hrdma_ep_destroy(EP(ep));
}

/* ----------------------------------------------------------- checksum -- */

JNIEXPORT jint JNICALL JNI_CLASS(crc32c0)(JNIEnv *env, jclass cls, jint crc,
                                          jlong addr, jlong len)
{
    (void)env; (void)cls;
    return (jint)hrdma_crc32c((uint32_t)crc, PTR(addr), (size_t)len);
}

JNIEXPORT jint JNICALL JNI_CLASS(crc32cChunksCompute0)(JNIEnv *env, jclass cls,
                                                       jlong data, jlong len,
                                                       jint bpc, jlong sums,
                                                       jlong sums_len)
{
    (void)env; (void)cls;
    if (len < 0 || bpc <= 0 || sums_len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_crc32c_chunks_compute(PTR(data), (size_t)len, (uint32_t)bpc,
                                       PTR(sums), (size_t)sums_len);
}

/* Returns -1 when every chunk matches, the offset of the first bad chunk
 * (>= 0) on mismatch, or an error status below -1 shifted by -1000. */
JNIEXPORT jlong JNICALL JNI_CLASS(crc32cChunksVerify0)(JNIEnv *env, jclass cls,
                                                       jlong data, jlong len,
                                                       jint bpc, jlong sums,
                                                       jlong sums_len)
{
    size_t bad = 0;
    int st;

    (void)env; (void)cls;
    if (len < 0 || bpc <= 0 || sums_len < 0) {
        return -1000 + HRDMA_ERR_INVALID;
    }
    st = hrdma_crc32c_chunks_verify(PTR(data), (size_t)len, (uint32_t)bpc,
                                    PTR(sums), (size_t)sums_len, &bad);
    if (st == HRDMA_OK) {
        return -1;
    }
    if (st == HRDMA_ERR_CHECKSUM) {
        return (jlong)bad;
    }
    return -1000 + st;
}

JNIEXPORT jlong JNICALL JNI_CLASS(bufferAddress0)(JNIEnv *env, jclass cls,
                                                  jobject buf)
{
    (void)cls;
    return (jlong)(uintptr_t)(*env)->GetDirectBufferAddress(env, buf);
}

/* ------------------------------------------------------------------ disk -- */

/* >= 0: the file descriptor; < 0: status. */
JNIEXPORT jlong JNICALL JNI_CLASS(diskOpen0)(JNIEnv *env, jclass cls,
                                             jstring jpath, jint flags)
{
    const char *path;
    int fd = -1, st;

    (void)cls;
    if (jpath == NULL) {
        return HRDMA_ERR_INVALID;
    }
    path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        return HRDMA_ERR_NOMEM;
    }
    st = hrdma_disk_open(path, flags, &fd);
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    return st < 0 ? st : fd;
}

JNIEXPORT jint JNICALL JNI_CLASS(diskClose0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    return hrdma_disk_close(fd);
}

JNIEXPORT jint JNICALL JNI_CLASS(diskPreallocate0)(JNIEnv *env, jclass cls,
                                                   jint fd, jlong off, jlong len)
{
    (void)env; (void)cls;
    if (off < 0 || len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_disk_preallocate(fd, (uint64_t)off, (uint64_t)len);
}

JNIEXPORT jint JNICALL JNI_CLASS(diskTrim0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    return hrdma_disk_trim(fd);
}

JNIEXPORT jint JNICALL JNI_CLASS(diskDropCache0)(JNIEnv *env, jclass cls,
                                                 jint fd, jlong off, jlong len,
                                                 jboolean written)
{
    (void)env; (void)cls;
    if (off < 0 || len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_disk_drop_cache(fd, (uint64_t)off, (uint64_t)len, written);
}

JNIEXPORT jint JNICALL JNI_CLASS(diskWriteback0)(JNIEnv *env, jclass cls,
                                                 jint fd, jlong off, jlong len)
{
    (void)env; (void)cls;
    if (off < 0 || len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_disk_writeback(fd, (uint64_t)off, (uint64_t)len);
}

/* >= 0: extents; < 0: status. */
JNIEXPORT jlong JNICALL JNI_CLASS(diskExtentCount0)(JNIEnv *env, jclass cls,
                                                    jint fd)
{
    uint32_t n = 0;
    int st;

    (void)env; (void)cls;
    st = hrdma_disk_extent_count(fd, &n);
    return st < 0 ? st : (jlong)n;
}

/* >= 0: bytes of the range in the page cache; < 0: status. */
JNIEXPORT jlong JNICALL JNI_CLASS(diskResident0)(JNIEnv *env, jclass cls,
                                                 jint fd, jlong off, jlong len)
{
    uint64_t n = 0;
    int st;

    (void)env; (void)cls;
    if (off < 0 || len < 0) {
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_disk_resident(fd, (uint64_t)off, (uint64_t)len, &n);
    return st < 0 ? st : (jlong)n;
}

/* > 0: alignment; < 0: status. */
JNIEXPORT jlong JNICALL JNI_CLASS(diskDirectAlignment0)(JNIEnv *env, jclass cls,
                                                        jint fd)
{
    uint32_t a = 0;
    int st;

    (void)env; (void)cls;
    st = hrdma_disk_direct_alignment(fd, &a);
    return st < 0 ? st : (jlong)a;
}

JNIEXPORT jlong JNICALL JNI_CLASS(diskRingCreate0)(JNIEnv *env, jclass cls,
                                                   jint depth)
{
    hrdma_disk_ring_t *ring = NULL;
    int st;

    (void)cls;
    st = depth <= 0 ? HRDMA_ERR_INVALID
                    : hrdma_disk_ring_create((unsigned)depth, &ring);
    if (st < 0) {
        hrdma_jni_throw(env, st, "create io_uring");
        return 0;
    }
    return (jlong)(uintptr_t)ring;
}

JNIEXPORT jint JNICALL JNI_CLASS(diskRingDestroy0)(JNIEnv *env, jclass cls,
                                                   jlong ring)
{
    (void)env; (void)cls;
    return hrdma_disk_ring_destroy((hrdma_disk_ring_t *)(uintptr_t)ring);
}

/* A read of [off, off+len) into addr, queued and submitted. */
JNIEXPORT jint JNICALL JNI_CLASS(diskRingRead0)(JNIEnv *env, jclass cls,
                                                jlong ring, jint fd, jlong addr,
                                                jlong len, jlong off,
                                                jlong cookie)
{
    hrdma_disk_ring_t *r = (hrdma_disk_ring_t *)(uintptr_t)ring;

    (void)env; (void)cls;
    if (len <= 0 || off < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_disk_ring_read(r, fd, PTR(addr), (size_t)len, (uint64_t)off,
                                (uint64_t)cookie);
}

/* Completions go to out (max pairs of u64 cookie, i64 result); returns how
 * many, or a negative status. */
JNIEXPORT jint JNICALL JNI_CLASS(diskRingReap0)(JNIEnv *env, jclass cls,
                                                jlong ring, jlong out, jint max,
                                                jint min_wait)
{
    unsigned n = 0;
    int st;

    (void)env; (void)cls;
    if (out == 0 || max <= 0 || min_wait < 0) {
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_disk_ring_reap((hrdma_disk_ring_t *)(uintptr_t)ring,
                              (hrdma_disk_completion_t *)PTR(out), (unsigned)max,
                              (unsigned)min_wait, &n);
    return st < 0 ? st : (jint)n;
}

/* ------------------------------------------------------------------- shm -- */

/* Slow path: the address of the mapping, or 0 with a NativeException that
 * carries the system's reason (errno) besides the status. */
static jlong hrdma_jni_shm_map(JNIEnv *env, jstring jpath, jlong len,
                               int create)
{
    const char *verb = create ? "create" : "open";
    char what[384];
    const char *path;
    void *addr = NULL;
    int st, err;

    if (jpath == NULL) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "shared memory segment");
        return 0;
    }
    path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        return 0; /* OutOfMemoryError pending */
    }
    /* a negative len becomes a size_t above INT64_MAX: refused */
    st = create ? hrdma_shm_create(path, (size_t)len, &addr)
                : hrdma_shm_open(path, (size_t)len, &addr);
    err = errno; /* before anything else can change it */
    if (st < 0) {
        snprintf(what, sizeof(what), "%s shared memory segment %s (%lld bytes)",
                 verb, path, (long long)len);
    }
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    if (st < 0) {
        hrdma_jni_throw_errno(env, st, what, err);
        return 0;
    }
    return (jlong)(uintptr_t)addr;
}

JNIEXPORT jlong JNICALL JNI_CLASS(shmCreate0)(JNIEnv *env, jclass cls,
                                              jstring jpath, jlong len)
{
    (void)cls;
    return hrdma_jni_shm_map(env, jpath, len, 1);
}

JNIEXPORT jlong JNICALL JNI_CLASS(shmOpen0)(JNIEnv *env, jclass cls,
                                            jstring jpath, jlong len)
{
    (void)cls;
    return hrdma_jni_shm_map(env, jpath, len, 0);
}

JNIEXPORT jint JNICALL JNI_CLASS(shmUnmap0)(JNIEnv *env, jclass cls,
                                            jlong addr, jlong len)
{
    (void)env; (void)cls;
    if (len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_shm_unmap(PTR(addr), (size_t)len);
}

JNIEXPORT jlong JNICALL JNI_CLASS(shmMappedBytes0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return (jlong)hrdma_shm_mapped_bytes();
}

/* A sealed anonymous segment (hrdma_shm_create_sealed): its address, its
 * descriptor in fd_out[0]; 0 with a NativeException. */
JNIEXPORT jlong JNICALL JNI_CLASS(shmCreateSealed0)(JNIEnv *env, jclass cls,
                                                    jlong len, jintArray fd_out)
{
    char what[128];
    void *addr = NULL;
    int fd = -1, st, err;
    jint out;

    (void)cls;
    if (fd_out == NULL || (*env)->GetArrayLength(env, fd_out) < 1 || len <= 0) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "create a sealed shared memory segment");
        return 0;
    }
    st = hrdma_shm_create_sealed((size_t)len, &addr, &fd);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "create a sealed shared memory segment (%lld bytes)",
                 (long long)len);
        hrdma_jni_throw_errno(env, st, what, err);
        return 0;
    }
    out = (jint)fd;
    (*env)->SetIntArrayRegion(env, fd_out, 0, 1, &out);
    return (jlong)(uintptr_t)addr;
}

JNIEXPORT jint JNICALL JNI_CLASS(shmDiscard0)(JNIEnv *env, jclass cls,
                                              jlong addr, jlong len)
{
    (void)env; (void)cls;
    if (len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_shm_discard(PTR(addr), (size_t)len);
}

/* Closes a descriptor of hrdma_shm_create_sealed not passed on. */
JNIEXPORT jint JNICALL JNI_CLASS(shmCloseFd0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    if (fd < 0) {
        return HRDMA_ERR_INVALID;
    }
    return close((int)fd) == 0 || errno == EINTR ? HRDMA_OK : HRDMA_ERR_IO;
}

/* A direct buffer over [addr, addr + len) (Java keeps len within an int);
 * nothing frees the memory when the buffer is collected. */
JNIEXPORT jobject JNICALL JNI_CLASS(directBuffer0)(JNIEnv *env, jclass cls,
                                                   jlong addr, jlong len)
{
    (void)cls;
    return (*env)->NewDirectByteBuffer(env, PTR(addr), len);
}

/* ----------------------------------------------------------------- fdmap -- */

/* A read-only descriptor of the regular file at jpath, or -1 with a
 * NativeException. */
JNIEXPORT jint JNICALL JNI_CLASS(fdOpenRead0)(JNIEnv *env, jclass cls,
                                              jstring jpath)
{
    char what[384];
    const char *path;
    int fd = -1, st, err;

    (void)cls;
    if (jpath == NULL) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "open a file to pass");
        return -1;
    }
    path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        return -1; /* OutOfMemoryError pending */
    }
    st = hrdma_fd_open_read(path, &fd);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "open %s read-only", path);
    }
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    if (st < 0) {
        hrdma_jni_throw_errno(env, st, what, err);
        return -1;
    }
    return (jint)fd;
}

/* Takes a received descriptor over; its size, or -1 with a NativeException
 * (the descriptor is closed then). */
JNIEXPORT jlong JNICALL JNI_CLASS(fdAdopt0)(JNIEnv *env, jclass cls, jint fd)
{
    char what[96];
    uint64_t size = 0;
    int st, err;

    (void)cls;
    st = hrdma_fd_adopt((int)fd, &size);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "take over descriptor %d", (int)fd);
        hrdma_jni_throw_errno(env, st, what, err);
        return -1;
    }
    return (jlong)size;
}

JNIEXPORT jint JNICALL JNI_CLASS(fdClose0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    return hrdma_fd_close((int)fd);
}

/* The address of offset in a new read-only mapping, or 0 with a
 * NativeException. */
JNIEXPORT jlong JNICALL JNI_CLASS(fdMap0)(JNIEnv *env, jclass cls, jint fd,
                                          jlong offset, jlong len)
{
    char what[128];
    const void *addr = NULL;
    int st, err;

    (void)cls;
    if (offset < 0 || len <= 0) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "map a received file: bad range");
        return 0;
    }
    st = hrdma_fd_map((int)fd, (uint64_t)offset, (size_t)len, &addr);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "map [%lld, %lld) of descriptor %d",
                 (long long)offset, (long long)offset + (long long)len, (int)fd);
        hrdma_jni_throw_errno(env, st, what, err);
        return 0;
    }
    return (jlong)(uintptr_t)addr;
}

/* The address of a new read-write mapping of the first len bytes of a
 * received sealed segment, or 0 with a NativeException. */
JNIEXPORT jlong JNICALL JNI_CLASS(fdMapShared0)(JNIEnv *env, jclass cls, jint fd,
                                                jlong len)
{
    char what[128];
    void *addr = NULL;
    int st, err;

    (void)cls;
    if (len <= 0) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "map a received segment: bad length");
        return 0;
    }
    st = hrdma_fd_map_shared((int)fd, (size_t)len, &addr);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "map %lld bytes of received segment %d read-write",
                 (long long)len, (int)fd);
        hrdma_jni_throw_errno(env, st, what, err);
        return 0;
    }
    return (jlong)(uintptr_t)addr;
}

JNIEXPORT jint JNICALL JNI_CLASS(fdUnmap0)(JNIEnv *env, jclass cls,
                                           jlong addr, jlong len)
{
    (void)env; (void)cls;
    if (len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_fd_unmap(PTR(addr), (size_t)len);
}

JNIEXPORT jint JNICALL JNI_CLASS(fdAdviseRandom0)(JNIEnv *env, jclass cls,
                                                 jlong addr, jlong len)
{
    (void)env; (void)cls;
    if (len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_fd_advise_random(PTR(addr), (size_t)len);
}

JNIEXPORT jint JNICALL JNI_CLASS(fdAdviseWillNeed0)(JNIEnv *env, jclass cls,
                                                   jlong addr, jlong len)
{
    (void)env; (void)cls;
    if (len <= 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_fd_advise_willneed(PTR(addr), (size_t)len);
}

/* Bytes read into [addr, addr + len) from offset of fd (fewer only where the
 * file ends), or -1 with a NativeException. */
JNIEXPORT jlong JNICALL JNI_CLASS(fdPread0)(JNIEnv *env, jclass cls, jint fd,
                                          jlong addr, jlong len, jlong offset)
{
    char what[96];
    size_t done = 0;
    int st, err;

    (void)cls;
    if (len < 0 || offset < 0) {
        hrdma_jni_throw_errno(env, HRDMA_ERR_INVALID, "read a descriptor", EINVAL);
        return -1;
    }
    st = hrdma_fd_pread((int)fd, PTR(addr), (size_t)len, (uint64_t)offset, &done);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "read %lld bytes at %lld of descriptor %d",
                 (long long)len, (long long)offset, (int)fd);
        hrdma_jni_throw_errno(env, st, what, err);
        return -1;
    }
    return (jlong)done;
}

/* The result of hrdma_fd_pread_verify for Java: the bytes read (>= 0), or
 * -2 - the offset of the first bad chunk, or -1 with a NativeException. */
static jlong hrdma_jni_pread_verify_result(JNIEnv *env, int st, int err,
                                           size_t done, size_t bad, jint fd,
                                           jlong len, jlong offset)
{
    char what[96];

    if (st == HRDMA_OK) {
        return (jlong)done;
    }
    if (st == HRDMA_ERR_CHECKSUM) {
        return -2 - (jlong)bad;
    }
    snprintf(what, sizeof(what), "read and verify %lld bytes at %lld of descriptor %d",
             (long long)len, (long long)offset, (int)fd);
    hrdma_jni_throw_errno(env, st, what, err);
    return -1;
}

/* hrdma_fd_pread_verify into [addr, addr + len) (a direct buffer's); sums 0:
 * nothing verified. */
JNIEXPORT jlong JNICALL JNI_CLASS(fdPreadVerify0)(JNIEnv *env, jclass cls, jint fd,
                                                  jlong addr, jlong len, jlong offset,
                                                  jboolean nowait, jint bpc,
                                                  jlong sums, jlong sums_len)
{
    size_t done = 0, bad = 0;
    int st, err;

    (void)cls;
    if (len < 0 || offset < 0 || bpc < 0 || sums_len < 0) {
        hrdma_jni_throw_errno(env, HRDMA_ERR_INVALID, "read and verify a descriptor", EINVAL);
        return -1;
    }
    st = hrdma_fd_pread_verify((int)fd, PTR(addr), (size_t)len, (uint64_t)offset,
                               nowait == JNI_TRUE, (uint32_t)bpc,
                               sums != 0 ? PTR(sums) : NULL, (size_t)sums_len,
                               &done, &bad);
    err = errno;
    return hrdma_jni_pread_verify_result(env, st, err, done, bad, fd, len, offset);
}

/* The same into [off, off + len) of a byte[]: the array is pinned
 * (GetPrimitiveArrayCritical, as Hadoop's NativeCrc32 does for arrays) for
 * the pread and the CRC only, no JNI call and no lock in between; the caller
 * keeps len small (Java: at most 1 MiB) and asks with nowait, so the pin is
 * not held across disk I/O. */
JNIEXPORT jlong JNICALL JNI_CLASS(fdPreadVerifyArray0)(JNIEnv *env, jclass cls, jint fd,
                                                       jbyteArray array, jint off, jint len,
                                                       jlong offset, jboolean nowait,
                                                       jint bpc, jlong sums, jlong sums_len)
{
    size_t done = 0, bad = 0;
    jsize n;
    void *a;
    int st, err;

    (void)cls;
    if (array == NULL || off < 0 || len < 0 || offset < 0 || bpc < 0 || sums_len < 0) {
        hrdma_jni_throw_errno(env, HRDMA_ERR_INVALID, "read and verify a descriptor", EINVAL);
        return -1;
    }
    n = (*env)->GetArrayLength(env, array);
    if (len > n - off) {
        hrdma_jni_throw_errno(env, HRDMA_ERR_INVALID, "read and verify a descriptor: range outside the array",
                              EINVAL);
        return -1;
    }
    a = (*env)->GetPrimitiveArrayCritical(env, array, NULL);
    if (a == NULL) {
        return -1; /* OutOfMemoryError pending */
    }
    st = hrdma_fd_pread_verify((int)fd, (unsigned char *)a + off, (size_t)len,
                               (uint64_t)offset, nowait == JNI_TRUE, (uint32_t)bpc,
                               sums != 0 ? PTR(sums) : NULL, (size_t)sums_len,
                               &done, &bad);
    err = errno;
    /* mode 0: were it a copy, the bytes read go back into the array */
    (*env)->ReleasePrimitiveArrayCritical(env, array, a, 0);
    return hrdma_jni_pread_verify_result(env, st, err, done, bad, fd, len, offset);
}

JNIEXPORT jint JNICALL JNI_CLASS(fdFadviseWillNeed0)(JNIEnv *env, jclass cls,
                                                    jint fd, jlong offset, jlong len)
{
    (void)env; (void)cls;
    if (offset < 0 || len < 0) {
        return HRDMA_ERR_INVALID;
    }
    return hrdma_fd_fadvise_willneed((int)fd, (uint64_t)offset, (uint64_t)len);
}

JNIEXPORT jlong JNICALL JNI_CLASS(fdMappedBytes0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return (jlong)hrdma_fd_mapped_bytes();
}

JNIEXPORT jlong JNICALL JNI_CLASS(fdsHeld0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return (jlong)hrdma_fds_held();
}

/* ------------------------------------------------------------------- uds -- */

/* Bytes a send or receive goes through on the stack; more is allocated. */
#define HRDMA_JNI_UDS_STACK 8192

/* Timeouts come as Java longs (ms, >= 0): clamped to an int. */
static int hrdma_jni_uds_timeout(jlong timeout_ms)
{
    return timeout_ms < 0 ? 0 : timeout_ms > INT32_MAX ? INT32_MAX : (int)timeout_ms;
}

/* A connected socket's descriptor, or -1 with a NativeException that carries
 * the system's reason (a refused connection, a missing path, permissions). */
JNIEXPORT jint JNICALL JNI_CLASS(udsConnect0)(JNIEnv *env, jclass cls,
                                              jstring jpath, jlong timeout_ms)
{
    char what[256];
    const char *path;
    int fd = -1, st, err;

    (void)cls;
    if (jpath == NULL) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "connect a domain socket");
        return -1;
    }
    path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) {
        return -1; /* OutOfMemoryError pending */
    }
    st = hrdma_uds_connect(path, hrdma_jni_uds_timeout(timeout_ms), &fd);
    err = errno;
    if (st < 0) {
        snprintf(what, sizeof(what), "connect to %s", path);
    }
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    if (st < 0) {
        hrdma_jni_throw_errno(env, st, what, err);
        return -1;
    }
    return (jint)fd;
}

/* A connected pair into out[0], out[1]; 0 or a negative status. */
JNIEXPORT jint JNICALL JNI_CLASS(udsPair0)(JNIEnv *env, jclass cls, jintArray out)
{
    jint pair[2];
    int a = -1, b = -1, st;

    (void)cls;
    if (out == NULL || (*env)->GetArrayLength(env, out) < 2) {
        return HRDMA_ERR_INVALID;
    }
    st = hrdma_uds_pair(&a, &b);
    if (st < 0) {
        return st;
    }
    pair[0] = (jint)a;
    pair[1] = (jint)b;
    (*env)->SetIntArrayRegion(env, out, 0, 2, pair);
    return HRDMA_OK;
}

/* Sends [off, off + len) of buf, the descriptors of fds (may be null) with
 * its first bytes; 0 or a negative status. */
JNIEXPORT jint JNICALL JNI_CLASS(udsSend0)(JNIEnv *env, jclass cls, jint fd,
                                           jbyteArray buf, jint off, jint len,
                                           jintArray fds, jlong timeout_ms)
{
    unsigned char stack[HRDMA_JNI_UDS_STACK], *b = stack;
    jint in[HRDMA_UDS_MAX_FDS];
    int pass[HRDMA_UDS_MAX_FDS];
    unsigned nfds = 0, i;
    int st;

    (void)cls;
    if (buf == NULL || off < 0 || len < 0 ||
        len > (*env)->GetArrayLength(env, buf) - off) {
        return HRDMA_ERR_INVALID;
    }
    if (fds != NULL) {
        jsize k = (*env)->GetArrayLength(env, fds);
        if (k > HRDMA_UDS_MAX_FDS) {
            return HRDMA_ERR_INVALID;
        }
        nfds = (unsigned)k;
        (*env)->GetIntArrayRegion(env, fds, 0, k, in);
        for (i = 0; i < nfds; i++) {
            pass[i] = (int)in[i];
        }
    }
    /* a copy: no array stays pinned across a wait */
    if (len > HRDMA_JNI_UDS_STACK) {
        b = malloc((size_t)len);
        if (b == NULL) {
            return HRDMA_ERR_NOMEM;
        }
    }
    (*env)->GetByteArrayRegion(env, buf, off, len, (jbyte *)b);
    st = hrdma_uds_send_fds((int)fd, b, (size_t)len, pass, nfds,
                            hrdma_jni_uds_timeout(timeout_ms));
    if (b != stack) {
        free(b);
    }
    return st;
}

/* Receives up to len bytes into [off, off + len) of buf (at most the stack
 * buffer's size at a time) and up to fds.length descriptors (fds may be
 * null: none), stored at the start of fds, -1 after them. The bytes
 * received (0: end of stream), or a negative status. */
JNIEXPORT jint JNICALL JNI_CLASS(udsRecv0)(JNIEnv *env, jclass cls, jint fd,
                                           jbyteArray buf, jint off, jint len,
                                           jintArray fds, jlong timeout_ms)
{
    unsigned char b[HRDMA_JNI_UDS_STACK];
    int got[HRDMA_UDS_MAX_FDS];
    jint out[HRDMA_UDS_MAX_FDS];
    unsigned max_fds = 0, nfds = 0, i;
    size_t n = 0;
    int st;

    (void)cls;
    if (buf == NULL || off < 0 || len <= 0 ||
        len > (*env)->GetArrayLength(env, buf) - off) {
        return HRDMA_ERR_INVALID;
    }
    if (fds != NULL) {
        jsize k = (*env)->GetArrayLength(env, fds);
        if (k > HRDMA_UDS_MAX_FDS) {
            return HRDMA_ERR_INVALID;
        }
        max_fds = (unsigned)k;
    }
    st = hrdma_uds_recv((int)fd, b, len < HRDMA_JNI_UDS_STACK ? (size_t)len : sizeof(b),
                        got, max_fds, hrdma_jni_uds_timeout(timeout_ms), &n, &nfds);
    if (st < 0) {
        return st;
    }
    (*env)->SetByteArrayRegion(env, buf, off, (jsize)n, (const jbyte *)b);
    if (max_fds > 0) {
        for (i = 0; i < max_fds; i++) {
            out[i] = i < nfds ? (jint)got[i] : -1;
        }
        (*env)->SetIntArrayRegion(env, fds, 0, (jsize)max_fds, out);
    }
    return (jint)n;
}

JNIEXPORT jint JNICALL JNI_CLASS(udsClose0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    return hrdma_uds_close((int)fd);
}

JNIEXPORT jlong JNICALL JNI_CLASS(udsSockets0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return (jlong)hrdma_uds_sockets();
}

/* Closes a received descriptor the caller does not take over. */
JNIEXPORT jint JNICALL JNI_CLASS(udsCloseReceived0)(JNIEnv *env, jclass cls, jint fd)
{
    (void)env; (void)cls;
    if (fd < 0) {
        return HRDMA_ERR_INVALID;
    }
    return close((int)fd) == 0 || errno == EINTR ? HRDMA_OK : HRDMA_ERR_IO;
}

/* ------------------------------------------------------------------ aead -- */

JNIEXPORT jboolean JNICALL JNI_CLASS(gcmAvailable0)(JNIEnv *env, jclass cls)
{
    (void)env; (void)cls;
    return hrdma_gcm_available() ? JNI_TRUE : JNI_FALSE;
}

/* The key is copied into the cipher's schedule; the Java array is not kept. */
JNIEXPORT jlong JNICALL JNI_CLASS(gcmCreate0)(JNIEnv *env, jclass cls,
                                              jbyteArray key, jboolean encrypt)
{
    unsigned char k[32];
    hrdma_gcm_t *g = NULL;
    jsize n;
    int st;

    (void)cls;
    n = (*env)->GetArrayLength(env, key);
    if (n != 16 && n != 32) {
        hrdma_jni_throw(env, HRDMA_ERR_INVALID, "gcm key of neither 16 nor 32 bytes");
        return 0;
    }
    (*env)->GetByteArrayRegion(env, key, 0, n, (jbyte *)k);
    st = hrdma_gcm_create(k, (size_t)n, encrypt == JNI_TRUE, &g);
    memset(k, 0, sizeof(k));
    if (st != HRDMA_OK) {
        hrdma_jni_throw(env, st, "gcm create");
        return 0;
    }
    return (jlong)(uintptr_t)g;
}

JNIEXPORT void JNICALL JNI_CLASS(gcmDestroy0)(JNIEnv *env, jclass cls, jlong g)
{
    (void)env; (void)cls;
    hrdma_gcm_destroy((hrdma_gcm_t *)(uintptr_t)g);
}

/* The nonce is the 64-bit counter after 4 zero bytes, big-endian (Sealer's). */
static void hrdma_jni_nonce(uint8_t nonce[HRDMA_GCM_NONCE_BYTES], jlong counter)
{
    int i;

    memset(nonce, 0, 4);
    for (i = 0; i < 8; i++) {
        nonce[4 + i] = (uint8_t)((uint64_t)counter >> (56 - 8 * i));
    }
}

JNIEXPORT jint JNICALL JNI_CLASS(gcmSeal0)(JNIEnv *env, jclass cls, jlong g,
                                           jlong counter, jlong src, jlong len,
                                           jlong dst)
{
    uint8_t nonce[HRDMA_GCM_NONCE_BYTES];

    (void)env; (void)cls;
    if (len < 0) {
        return HRDMA_ERR_INVALID;
    }
    hrdma_jni_nonce(nonce, counter);
    return hrdma_gcm_seal((hrdma_gcm_t *)(uintptr_t)g, nonce, PTR(src),
                          (size_t)len, PTR(dst));
}

JNIEXPORT jint JNICALL JNI_CLASS(gcmOpen0)(JNIEnv *env, jclass cls, jlong g,
                                           jlong counter, jlong buf, jlong len)
{
    uint8_t nonce[HRDMA_GCM_NONCE_BYTES];

    (void)env; (void)cls;
    if (len < 0) {
        return HRDMA_ERR_INVALID;
    }
    hrdma_jni_nonce(nonce, counter);
    return hrdma_gcm_open((hrdma_gcm_t *)(uintptr_t)g, nonce, PTR(buf),
                          (size_t)len);
}
