package io.sinkcoordinator.jvm;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A table in a local directory: key {@code a/b} is the file {@code ROOT/a/b}, the layout of the
 * Rust host's {@code LocalDirStorage} and the Python package's {@code DirectoryStorage}, so
 * {@code sinkcoord inspect} reads it. Keys are confined under the root (absolute keys, empty,
 * {@code .} and {@code ..} segments, backslashes and NUL are {@code invalid-key}); every write goes
 * through a temporary file that is fsynced before it becomes visible: a hard link for the atomic
 * create (it fails if the key exists, on every POSIX file system), a rename for the overwrite.
 */
public final class DirectoryStorage implements Storage {
  /** Temporary files start with this; keys may not (the Rust host's prefix). */
  public static final String TMP_PREFIX = ".sinkcoord-tmp.";

  private static final AtomicLong TMP_COUNTER = new AtomicLong();

  private final Path root;

  /** A storage under {@code root}, created if missing. */
  public DirectoryStorage(Path root) throws BackendException {
    this.root = root.toAbsolutePath().normalize();
    try {
      Files.createDirectories(this.root);
    } catch (IOException e) {
      throw new BackendException(
          BackendException.Kind.IO, "cannot create " + this.root + ": " + e, e);
    }
  }

  public Path root() {
    return root;
  }

  /** The segments of a key (or of a prefix, whose last segment may be partial or empty). */
  private static String[] check(String what, String s, boolean prefix) throws BackendException {
    if (s.isEmpty() && !prefix) {
      throw BackendException.invalidKey("empty key");
    }
    String problem = null;
    if (s.indexOf('\\') >= 0) {
      problem = "contains a backslash";
    } else if (s.indexOf('\0') >= 0) {
      problem = "contains NUL";
    } else if (s.startsWith("/")) {
      problem = "is absolute";
    }
    String[] segments = s.split("/", -1);
    int checked = prefix ? segments.length - 1 : segments.length;
    for (int i = 0; i < checked && problem == null; i++) {
      String seg = segments[i];
      if (seg.isEmpty()) {
        problem = "has an empty segment";
      } else if (seg.equals(".") || seg.equals("..")) {
        problem = "has a \"" + seg + "\" segment";
      } else if (seg.startsWith(TMP_PREFIX)) {
        problem = "uses the reserved name prefix \"" + TMP_PREFIX + "\"";
      }
    }
    if (problem != null) {
      throw BackendException.invalidKey(what + " \"" + s + "\" " + problem);
    }
    return segments;
  }

  private Path path(String key) throws BackendException {
    Path p = root;
    for (String seg : check("key", key, false)) {
      p = p.resolve(seg);
    }
    return p;
  }

  private static BackendException io(String what, String key, IOException e) {
    return new BackendException(
        BackendException.Kind.IO, "cannot " + what + " \"" + key + "\": " + e, e);
  }

  @Override
  public byte[] get(String key) throws BackendException {
    Path p = path(key);
    try {
      return Files.readAllBytes(p);
    } catch (NoSuchFileException | NotDirectoryException e) {
      return null;
    } catch (IOException e) {
      if (Files.isDirectory(p)) {
        return null; // a key that is a directory of other keys has no value
      }
      throw io("read", key, e);
    }
  }

  private Path writeTmp(Path target, byte[] value) throws IOException {
    Path dir = target.getParent();
    Files.createDirectories(dir);
    Path tmp = dir.resolve(TMP_PREFIX + ProcessHandle.current().pid() + "." + TMP_COUNTER.incrementAndGet());
    try (FileChannel ch =
        FileChannel.open(
            tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
      ch.write(java.nio.ByteBuffer.wrap(value));
      ch.force(true);
    }
    return tmp;
  }

  private static void syncDir(Path dir) {
    // Durability of the new name; not every platform can open a directory, which is fine there.
    try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
      ch.force(true);
    } catch (IOException | UnsupportedOperationException e) {
      // best effort
    }
  }

  @Override
  public boolean putIfAbsent(String key, byte[] value) throws BackendException {
    Path p = path(key);
    try {
      Path tmp = writeTmp(p, value);
      boolean created;
      try {
        Files.createLink(p, tmp);
        created = true;
      } catch (FileAlreadyExistsException e) {
        created = false;
      } finally {
        Files.deleteIfExists(tmp);
      }
      if (created) {
        syncDir(p.getParent());
      }
      return created;
    } catch (IOException e) {
      throw io("create", key, e);
    }
  }

  @Override
  public void put(String key, byte[] value) throws BackendException {
    Path p = path(key);
    try {
      Path tmp = writeTmp(p, value);
      Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      syncDir(p.getParent());
    } catch (IOException e) {
      throw io("write", key, e);
    }
  }

  @Override
  public void delete(String key) throws BackendException {
    Path p = path(key);
    try {
      Files.deleteIfExists(p);
    } catch (NotDirectoryException e) {
      // a parent is a file: the key does not exist
    } catch (IOException e) {
      throw io("delete", key, e);
    }
  }

  @Override
  public List<String> list(String prefix) throws BackendException {
    String[] segments = check("prefix", prefix, true);
    Path start = root;
    StringBuilder rel = new StringBuilder();
    for (int i = 0; i < segments.length - 1; i++) {
      start = start.resolve(segments[i]);
      rel.append(segments[i]).append('/');
    }
    List<String> keys = new ArrayList<>();
    try {
      walk(start, rel.toString(), prefix, keys);
    } catch (IOException e) {
      throw io("list", prefix, e);
    }
    keys.sort(MemoryStorage::byteOrder);
    return keys;
  }

  private static void walk(Path dir, String rel, String prefix, List<String> out)
      throws IOException {
    if (!Files.isDirectory(dir)) {
      return;
    }
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path e : entries) {
        String name = e.getFileName().toString();
        if (name.startsWith(TMP_PREFIX)) {
          continue;
        }
        String key = rel + name;
        if (Files.isDirectory(e)) {
          // Only descend where keys with the prefix can be.
          if (key.startsWith(prefix) || prefix.startsWith(key + "/")) {
            walk(e, key + "/", prefix, out);
          }
        } else if (key.startsWith(prefix)) {
          out.add(key);
        }
      }
    }
  }
}
