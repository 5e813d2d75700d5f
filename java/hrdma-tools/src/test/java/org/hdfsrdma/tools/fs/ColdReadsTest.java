package org.hdfsrdma.tools.fs;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ColdReadsTest {
  @TempDir
  Path dir;

  private Path file(String name, int size) throws IOException {
    Path p = dir.resolve(name);
    Files.write(p, new byte[size]);
    return p;
  }

  @Test
  void fioReadsOnlyBlockFilesOfAtLeastOneRequest() throws IOException {
    Path whole = file("blk_1", ColdReads.FIO_BS * 2);
    Path exact = file("blk_2", ColdReads.FIO_BS);
    Path tail = file("blk_3", 100 << 10); // a short last block: fio would refuse the whole run
    assertEquals(List.of(whole, exact), ColdReads.fioFiles(List.of(whole, exact, tail)));
  }

  @Test
  void aFileSmallerThanOneRequestHasNoFioAnchor() throws IOException {
    assertEquals(List.of(), ColdReads.fioFiles(List.of(file("blk_4", 64 << 10))));
  }
}
