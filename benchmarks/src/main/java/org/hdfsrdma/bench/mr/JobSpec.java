package org.hdfsrdma.bench.mr;

import java.io.IOException;
import java.io.StringReader;
import java.io.StringWriter;
import java.util.Properties;

/**
 * One run of one Hadoop program on one data path. Immutable; travels to a child JVM
 * (a client in a network namespace) as properties text.
 *
 * @param job         dfsio, randomwriter or sort
 * @param ours        our client (RdmaDistributedFileSystem) or the stock DistributedFileSystem
 * @param run         the run number (1-based), names the HDFS directories
 * @param files       files (TestDFSIO -nrFiles; maps of RandomWriter)
 * @param fileBytes   bytes per file (per map)
 * @param blockBytes  dfs.blocksize
 * @param clients     concurrent tasks (mapreduce.local.map/reduce.tasks.maximum; Sort's reduces)
 * @param replication dfs.replication
 * @param validate    sort only: run SortValidator over the output
 * @param workDir     local directory for the job's scratch space and captured output
 * @param yarnRm      null: the local job runner in this JVM; else the ResourceManager HOST:PORT
 */
public record JobSpec(String job, boolean ours, int run, int files, long fileBytes, long blockBytes, int clients,
    int replication, boolean validate, String workDir, String yarnRm) {

  public String path() {
    return ours ? "ours" : "stock";
  }

  public long totalBytes() {
    return files * fileBytes;
  }

  /** The HDFS directory of this job's data. */
  public String hdfsDir() {
    return "/hrdma-bench/" + job + "-" + path() + "-" + run;
  }

  public String toText() {
    Properties p = new Properties();
    p.setProperty("job", job);
    p.setProperty("ours", Boolean.toString(ours));
    p.setProperty("run", Integer.toString(run));
    p.setProperty("files", Integer.toString(files));
    p.setProperty("file-bytes", Long.toString(fileBytes));
    p.setProperty("block-bytes", Long.toString(blockBytes));
    p.setProperty("clients", Integer.toString(clients));
    p.setProperty("replication", Integer.toString(replication));
    p.setProperty("validate", Boolean.toString(validate));
    p.setProperty("work-dir", workDir);
    if (yarnRm != null) {
      p.setProperty("yarn-rm", yarnRm);
    }
    StringWriter w = new StringWriter();
    try {
      p.store(w, null);
    } catch (IOException e) {
      throw new AssertionError(e);
    }
    return w.toString();
  }

  public static JobSpec parse(String text) throws IOException {
    Properties p = new Properties();
    p.load(new StringReader(text));
    try {
      return new JobSpec(p.getProperty("job"), Boolean.parseBoolean(p.getProperty("ours")),
          Integer.parseInt(p.getProperty("run")), Integer.parseInt(p.getProperty("files")),
          Long.parseLong(p.getProperty("file-bytes")), Long.parseLong(p.getProperty("block-bytes")),
          Integer.parseInt(p.getProperty("clients")), Integer.parseInt(p.getProperty("replication")),
          Boolean.parseBoolean(p.getProperty("validate")), p.getProperty("work-dir"), p.getProperty("yarn-rm"));
    } catch (RuntimeException e) {
      throw new IOException("bad job spec (" + e + "):\n" + text, e);
    }
  }
}
