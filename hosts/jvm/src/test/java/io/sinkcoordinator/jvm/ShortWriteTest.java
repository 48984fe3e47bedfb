package io.sinkcoordinator.jvm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A write cut short by the file system (RLIMIT_FSIZE in a child JVM: a short write, then EFBIG, as
 * on a nearly full disk) publishes nothing and leaves no temporary file: the value is whole or
 * absent (issue 26, "short writes and ENOSPC"). FileChannel.write may write fewer bytes than asked;
 * the storage ignored that count before, and published a torn value.
 */
class ShortWriteTest {
  @TempDir Path dir;

  /** The child: one 600 KiB create-once and one overwrite under the limit; prints what they did. */
  public static final class Child {
    public static void main(String[] args) throws Exception {
      DirectoryStorage d = new DirectoryStorage(Path.of(args[0]));
      String create;
      try {
        create = "created=" + d.putIfAbsent("snapshot/1", new byte[600 << 10]);
      } catch (BackendException e) {
        create = "error=" + e.kind();
      }
      String put;
      try {
        d.put("tag/big", new byte[600 << 10]);
        put = "ok";
      } catch (BackendException e) {
        put = "error=" + e.kind();
      }
      System.out.println("RESULT " + create + " " + put);
    }
  }

  @Test
  void aCutShortWritePublishesNothing() throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String cp = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    // SIGXFSZ ignored (inherited across exec), so the write fails with EFBIG instead of killing
    // the child; 200 blocks of 512 or 1024 bytes are less than 600 KiB.
    Process p =
        new ProcessBuilder(
                "sh", "-c", "trap '' XFSZ; ulimit -f 200; exec \"$0\" \"$@\"",
                java, "-Xshare:off", "-cp", cp, Child.class.getName(), dir.toString())
            .redirectErrorStream(true)
            .start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the child did not finish");
    assertEquals(0, p.exitValue(), out);
    assertTrue(out.contains("RESULT error=IO error=IO"), out);
    List<Path> left;
    try (Stream<Path> walk = Files.walk(dir)) {
      left = walk.filter(Files::isRegularFile).toList();
    }
    assertEquals(List.of(), left, "a torn value or a temporary file was left");
  }
}
