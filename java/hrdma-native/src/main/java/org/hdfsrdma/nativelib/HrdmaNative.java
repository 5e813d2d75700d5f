package org.hdfsrdma.nativelib;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;

/**
 * Loads libhrdma: from {@code -Dhrdma.native.library=/path/libhrdma.so} when
 * set, else from the copy packed in this jar; libhrdma-preload.so (from beside
 * it, or from the jar) is loaded first. The load checks the native ABI
 * version against {@link #ABI_VERSION} and the UCX version against
 * {@link #MIN_UCX}; {@link #isAvailable()} and {@link #unavailabilityCause()}
 * say whether it worked and why not.
 */
public final class HrdmaNative {
  /** Must equal HRDMA_ABI_VERSION in hrdma.h. */
  public static final int ABI_VERSION = 5;
  /** Oldest UCX the native core is built and tested against. */
  public static final String MIN_UCX = "1.13";
  public static final String LIBRARY_PROPERTY = "hrdma.native.library";
  private static final String RESOURCE_DIR = "/org/hdfsrdma/nativelib/linux-x86_64/";
  /** Loaded before libhrdma; native/src/preload/ucx_env.c says why. */
  static final String PRELOAD_NAME = "libhrdma-preload.so";

  private static final Throwable CAUSE;
  private static final String UCX_VERSION;

  static {
    Throwable cause = null;
    String ucx = null;
    try {
      load();
      int abi = Jni.abiVersion0();
      if (abi != ABI_VERSION) {
        throw new UnsatisfiedLinkError("libhrdma ABI version " + abi + ", this jar needs "
            + ABI_VERSION);
      }
      ucx = Jni.ucxVersion0();
      if (compareVersions(ucx, MIN_UCX) < 0) {
        throw new UnsatisfiedLinkError("UCX " + ucx + " is older than " + MIN_UCX);
      }
    } catch (Throwable t) {
      cause = t;
    }
    CAUSE = cause;
    UCX_VERSION = ucx;
  }

  private HrdmaNative() {}

  private static void load() throws IOException {
    String path = System.getProperty(LIBRARY_PROPERTY);
    if (path != null && !path.isEmpty()) {
      Path lib = Path.of(path).toAbsolutePath();
      Path preload = lib.resolveSibling(PRELOAD_NAME);
      if (!Files.isRegularFile(preload)) {
        throw new UnsatisfiedLinkError(PRELOAD_NAME + " must sit beside " + lib
            + " (it keeps UCX from patching libc while the JVM runs)");
      }
      System.load(preload.toString());
      System.load(lib.toString());
      return;
    }
    if (!"Linux".equals(System.getProperty("os.name"))
        || !"amd64".equals(System.getProperty("os.arch"))) {
      throw new UnsatisfiedLinkError("libhrdma is built for linux-x86_64 only, not "
          + System.getProperty("os.name") + "-" + System.getProperty("os.arch"));
    }
    // The preload first: it turns UCX's memory hooks off before libhrdma pulls UCX in.
    System.load(extract(RESOURCE_DIR + PRELOAD_NAME).toString());
    System.load(extract(RESOURCE_DIR + "libhrdma.so").toString());
  }

  private static Path extract(String resource) throws IOException {
    try (InputStream in = HrdmaNative.class.getResourceAsStream(resource)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(resource + " is not in the jar");
      }
      String name = Path.of(resource).getFileName().toString();
      Path tmp = Files.createTempFile(name.substring(0, name.length() - 3), ".so");
      tmp.toFile().deleteOnExit();
      Files.copy(in, tmp, StandardCopyOption.REPLACE_EXISTING);
      return tmp;
    }
  }

  /** Compares dotted version strings numerically ("1.13.1" vs "1.13"). */
  static int compareVersions(String a, String b) {
    String[] x = a.split("[.-]");
    String[] y = b.split("[.-]");
    for (int i = 0; i < Math.max(x.length, y.length); i++) {
      int p = i < x.length ? leadingInt(x[i]) : 0;
      int q = i < y.length ? leadingInt(y[i]) : 0;
      if (p != q) {
        return Integer.compare(p, q);
      }
    }
    return 0;
  }

  private static int leadingInt(String s) {
    int v = 0;
    for (int i = 0; i < s.length() && Character.isDigit(s.charAt(i)); i++) {
      v = v * 10 + (s.charAt(i) - '0');
    }
    return v;
  }

  public static boolean isAvailable() {
    return CAUSE == null;
  }

  /** Why the library is not available, or null. */
  public static Throwable unavailabilityCause() {
    return CAUSE;
  }

  public static void ensureAvailable() {
    if (CAUSE != null) {
      throw (Error) new UnsatisfiedLinkError("libhrdma is unavailable: " + CAUSE.getMessage())
          .initCause(CAUSE);
    }
  }

  public static int abiVersion() {
    ensureAvailable();
    return Jni.abiVersion0();
  }

  /**
   * Whether UCX's memory-event hooks are on in this process. They patch libc's
   * code while other threads run it, which can crash a JVM; the loader turns them
   * off unless {@code UCX_MEM_EVENTS} was set by the user.
   */
  public static boolean ucxMemoryHooks() {
    ensureAvailable();
    return Jni.ucxMemoryHooks0();
  }

  /** Version of the UCX library loaded at run time. */
  public static String ucxVersion() {
    ensureAvailable();
    return UCX_VERSION;
  }

  /** Transports and devices UCX finds with this configuration ("TLS=tcp;..."). */
  public static String ucxInfo(String ucxConfig) throws NativeException {
    ensureAvailable();
    long ctx = Jni.ctxCreate0(ucxConfig);
    try {
      return Jni.ctxInfo0(ctx);
    } finally {
      Jni.ctxDestroy0(ctx);
    }
  }

  /**
   * RDMA devices and ports, one line each ("device=mlx5_0 port=1 state=ACTIVE
   * link_layer=InfiniBand ..."); empty when there are none.
   */
  public static String probeDevices() throws NativeException {
    ensureAvailable();
    return Jni.probe0();
  }

  /**
   * What the native core holds in this process, summed over every UCX
   * context: live contexts, workers, endpoints, registered regions and bytes.
   * All zero once every transport is closed; a suite-wide leak check.
   */
  public record ProcessStats(long contexts, long workers, long endpoints, long regions, long bytesRegistered) {
    public boolean isEmpty() {
      return contexts == 0 && workers == 0 && endpoints == 0 && regions == 0 && bytesRegistered == 0;
    }
  }

  /** See {@link ProcessStats}; all zero when the library is not available (it holds nothing then). */
  public static ProcessStats processStats() {
    if (!isAvailable()) {
      return new ProcessStats(0, 0, 0, 0, 0);
    }
    long[] v = new long[5];
    Jni.processStats0(v);
    return new ProcessStats(v[4], v[3], v[2], v[1], v[0]);
  }

  public static String statusString(int status) {
    return isAvailable() ? Jni.statusString0(status) : "status " + status;
  }
}
