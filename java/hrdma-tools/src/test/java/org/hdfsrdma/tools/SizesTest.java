package org.hdfsrdma.tools;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import org.junit.jupiter.api.Test;

class SizesTest {
  @Test
  void parsesSuffixes() {
    assertEquals(8, Sizes.parse("8"));
    assertEquals(65536, Sizes.parse("64K"));
    assertEquals(65536, Sizes.parse("64k"));
    assertEquals(1 << 20, Sizes.parse("1M"));
    assertEquals(1 << 20, Sizes.parse("1MiB"));
    assertEquals(1 << 20, Sizes.parse("1mb"));
    assertEquals(2L << 30, Sizes.parse("2G"));
    assertEquals(List.of(8, 65536, 1 << 20), Sizes.parseList("8,64K,1M"));
  }

  @Test
  void rejectsBadSizes() {
    UsageException e = assertThrows(UsageException.class, () -> Sizes.parse("12Q"));
    assertTrue(e.getMessage().contains("12Q"), e.getMessage());
    assertThrows(UsageException.class, () -> Sizes.parse(""));
    assertThrows(UsageException.class, () -> Sizes.parse("K"));
    assertThrows(UsageException.class, () -> Sizes.parse("0"));
    assertThrows(UsageException.class, () -> Sizes.parse("-8"));
    assertThrows(UsageException.class, () -> Sizes.parseInt("2G"));
    assertThrows(UsageException.class, () -> Sizes.parse("99999999999999G"));
  }

  @Test
  void formatsShortest() {
    assertEquals("1M", Sizes.format(1 << 20));
    assertEquals("64K", Sizes.format(65536));
    assertEquals("1000", Sizes.format(1000));
    assertEquals("8", Sizes.format(8));
  }
}
