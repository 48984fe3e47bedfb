package io.sinkcoordinator.jvm;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Getting the coordinator's core module: out of a component binary (its largest core-module
 * section, as {@code hosts/raw-abi/example.mjs} does), or as is when the file already is a core
 * module (the xtask's {@code dist/sink-coordinator-<v>.core.wasm}).
 *
 * <p>This file uses nothing but the JDK on purpose: the Maven build runs it in source-file mode
 * ({@code java CoreModule.java REPO OUT}) before anything is compiled, to pick the core module
 * that the build-time compiler turns into JVM bytecode and that the jar bundles.
 */
public final class CoreModule {
  private static final byte[] CORE_HEADER = {0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00};
  private static final byte[] COMPONENT_HEADER = {0x00, 0x61, 0x73, 0x6d, 0x0d, 0x00, 0x01, 0x00};

  private CoreModule() {}

  /** Whether {@code bytes} start like a core module (version 1). */
  public static boolean isCoreModule(byte[] bytes) {
    return bytes.length >= 8 && Arrays.equals(bytes, 0, 8, CORE_HEADER, 0, 8);
  }

  /**
   * The core module of {@code bytes}: itself if it is one, else the largest core-module section
   * (id 1) of a component binary (wit-component writes the coordinator first, followed by two
   * tiny "shim" and "fixup" modules that only a component runtime needs).
   *
   * @throws IllegalArgumentException neither a core module nor a component holding one
   */
  public static byte[] fromBytes(byte[] bytes) {
    if (isCoreModule(bytes)) {
      return bytes;
    }
    if (bytes.length < 8 || !Arrays.equals(bytes, 0, 8, COMPONENT_HEADER, 0, 8)) {
      throw new IllegalArgumentException(
          "not a wasm core module or component binary (bad header)");
    }
    int bestStart = -1;
    int bestSize = -1;
    int pos = 8;
    while (pos < bytes.length) {
      int id = bytes[pos++] & 0xff;
      long size = 0;
      int shift = 0;
      while (true) {
        if (pos >= bytes.length || shift > 28) {
          throw new IllegalArgumentException("truncated component section header");
        }
        int b = bytes[pos++] & 0xff;
        size |= (long) (b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
          break;
        }
        shift += 7;
      }
      if (size > bytes.length - pos) {
        throw new IllegalArgumentException("truncated component section");
      }
      if (id == 0x01 && size > bestSize) {
        bestStart = pos;
        bestSize = (int) size;
      }
      pos += (int) size;
    }
    if (bestStart < 0) {
      throw new IllegalArgumentException("the component holds no core module");
    }
    return Arrays.copyOfRange(bytes, bestStart, bestStart + bestSize);
  }

  /** The WIT package version declared by {@code wit/coordinator.wit} of a checkout. */
  public static String witVersion(Path repo) throws IOException {
    String wit = Files.readString(repo.resolve("wit").resolve("coordinator.wit"));
    Matcher m = Pattern.compile("(?m)^package sink:coordinator@(\\S+);").matcher(wit);
    if (!m.find()) {
      throw new IOException("wit/coordinator.wit declares no sink:coordinator package version");
    }
    return m.group(1);
  }

  /** Lower-case hex SHA-256 of {@code bytes}. */
  public static String sha256(byte[] bytes) {
    try {
      return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes));
    } catch (NoSuchAlgorithmException e) {
      throw new AssertionError("every JDK has SHA-256", e);
    }
  }

  /**
   * The build step: {@code java CoreModule.java REPO OUTDIR}. Picks the core module of the
   * checkout's WIT version ({@code dist/sink-coordinator-<v>.core.wasm} if the xtask wrote it,
   * else extracted from {@code dist/sink-coordinator-<v>.wasm}; {@code -Dsinkcoord.component=FILE}
   * overrides both) and writes {@code OUTDIR/sink-coordinator.core.wasm} and
   * {@code OUTDIR/sink-coordinator.properties} (version, source, sha256). Files are only
   * rewritten when their bytes change, so an unchanged module does not recompile.
   */
  public static void main(String[] args) throws IOException {
    if (args.length != 2) {
      System.err.println("usage: java CoreModule.java REPO OUTDIR");
      System.exit(2);
    }
    Path repo = Path.of(args[0]).toAbsolutePath().normalize();
    Path out = Path.of(args[1]);
    String version = witVersion(repo);
    Path dist = repo.resolve("dist");
    String override = System.getProperty("sinkcoord.component", "");
    Path source;
    if (!override.isBlank()) {
      source = Path.of(override).toAbsolutePath();
    } else if (Files.isRegularFile(dist.resolve("sink-coordinator-" + version + ".core.wasm"))) {
      source = dist.resolve("sink-coordinator-" + version + ".core.wasm");
    } else {
      source = dist.resolve("sink-coordinator-" + version + ".wasm");
    }
    byte[] core;
    try {
      core = fromBytes(Files.readAllBytes(source));
    } catch (IllegalArgumentException e) {
      throw new IOException(source + ": " + e.getMessage(), e);
    }
    Files.createDirectories(out);
    writeIfChanged(out.resolve("sink-coordinator.core.wasm"), core);
    String props =
        "# written by CoreModule.java at build time\n"
            + "version=" + version + "\n"
            + "source=" + repo.relativize(source.toAbsolutePath().normalize()).toString().replace('\\', '/')
            + "\n"
            + "sha256=" + sha256(core) + "\n";
    writeIfChanged(
        out.resolve("sink-coordinator.properties"), props.getBytes(StandardCharsets.UTF_8));
    System.out.println(
        "core module " + source.getFileName() + " (" + core.length + " bytes) -> " + out);
  }

  private static void writeIfChanged(Path file, byte[] bytes) throws IOException {
    if (Files.isRegularFile(file) && Arrays.equals(Files.readAllBytes(file), bytes)) {
      return;
    }
    Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
    Files.write(tmp, bytes);
    Files.move(tmp, file, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
  }
}
