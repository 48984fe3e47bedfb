package io.sinkcoordinator.jvm;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.SeekableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.SecureRandom;
import java.util.ArrayList;
import java.util.List;

/**
 * A table in a local directory: key {@code a/b} is the file {@code ROOT/a/b}, the layout of the
 * Rust host's {@code LocalDirStorage} and the other hosts' directory storages, so {@code sinkcoord
 * inspect} reads it. Its rules are theirs (tests/storage/README.md):
 *
 * <ul>
 *   <li>keys are confined under the root (absolute keys, empty, {@code .} and {@code ..} segments,
 *       backslashes, NUL and the temporary prefix are {@code invalid-key}), and no link under the
 *       root is followed: a symbolic link at a key or at one of its directories is {@code
 *       invalid-key} naming it (the root itself may be a link: it is the operator's choice);
 *   <li>a FIFO, device, socket or directory at a key is {@code invalid-key} for {@code get} and
 *       {@code putIfAbsent}, found from its attributes before it is opened (so a FIFO never blocks
 *       a read);
 *   <li>a value larger than {@code maxValueBytes} (default 2 GiB; {@link #MAX_HINT_BYTES} under
 *       {@code hint/}) is a {@link ValueTooLargeException}, before a byte of it is read or written;
 *   <li>writes go through a temporary file (a random name, created exclusively without following a
 *       link, written whole, fsynced) that becomes visible with a hard link (create-once: it fails
 *       if the key exists) or a rename (overwrite), or is removed on failure; the directory is
 *       fsynced after.
 * </ul>
 *
 * <p>Java has no {@code openat}: directories are checked one level at a time without following
 * links, so a link swapped in between a check and the use is not caught (the final open never
 * follows a link, and a FIFO swapped in after the check could block a read).
 */
public final class DirectoryStorage implements Storage {
  /** Temporary files start with this; keys may not (the Rust host's prefix). */
  public static final String TMP_PREFIX = ".sinkcoord-tmp.";

  /**
   * The default bound on one value: 2 GiB, above the largest snapshot the core's default limits
   * let a commit write (max-snapshot-bytes 1.25 GiB plus framing); the Rust host's {@code
   * DEFAULT_MAX_VALUE_BYTES}. A Java array holds at most about 2^31 - 1 bytes, which is the
   * effective bound here.
   */
  public static final long DEFAULT_MAX_VALUE_BYTES = 2L << 30;

  /** The bound on a value under {@code hint/}: the core writes a decimal snapshot id there. */
  public static final long MAX_HINT_BYTES = 4096;

  /** The longest name common file systems hold (NAME_MAX): no longer name can exist. */
  private static final int NAME_MAX = 255;

  /** Fresh temporary names tried before a write gives up (each is random). */
  private static final int TMP_ATTEMPTS = 16;

  private static final SecureRandom RANDOM = new SecureRandom();

  private static final LinkOption[] NOFOLLOW = {LinkOption.NOFOLLOW_LINKS};

  private final Path root;
  private final long maxValueBytes;
  private final List<String> removedTempFiles;

  /** A storage under {@code root}, created if missing, with the default bound on values. */
  public DirectoryStorage(Path root) throws BackendException {
    this(root, DEFAULT_MAX_VALUE_BYTES);
  }

  /**
   * A storage under {@code root}, created if missing, whose values hold at most {@code
   * maxValueBytes} (set it above the snapshots the coordinator's limits allow).
   */
  public DirectoryStorage(Path root, long maxValueBytes) throws BackendException {
    if (maxValueBytes < 0) {
      throw new IllegalArgumentException("maxValueBytes must not be negative: " + maxValueBytes);
    }
    this.root = root.toAbsolutePath().normalize();
    this.maxValueBytes = maxValueBytes;
    try {
      Files.createDirectories(this.root);
    } catch (IOException e) {
      throw new BackendException(
          BackendException.Kind.IO, "cannot create " + this.root + ": " + e, e);
    }
    this.removedTempFiles = List.copyOf(sweepTempFiles(this.root));
  }

  /**
   * The temporary files (paths below the root) that opening the table removed: those named {@code
   * .sinkcoord-tmp.<pid>.<n>} whose process no longer exists, as the Rust host's {@code
   * LocalDirStorage.open} does. A live writer's file is never removed.
   */
  public List<String> removedTempFiles() {
    return removedTempFiles;
  }

  /** Removes dead writers' temporary files, never through a link; best effort (errors ignored). */
  private static List<String> sweepTempFiles(Path root) {
    List<String> removed = new ArrayList<>();
    try {
      Files.walkFileTree(
          root,
          java.util.Set.of(),
          MAX_DEPTH,
          new java.nio.file.SimpleFileVisitor<Path>() {
            @Override
            public java.nio.file.FileVisitResult visitFile(Path file, BasicFileAttributes a) {
              String name = file.getFileName().toString();
              if (a.isRegularFile()
                  && name.startsWith(TMP_PREFIX)
                  && writerIsDead(name.substring(TMP_PREFIX.length()))) {
                try {
                  Files.deleteIfExists(file);
                  removed.add(root.relativize(file).toString().replace('\\', '/'));
                } catch (IOException e) {
                  // not ours to remove, or gone
                }
              }
              return java.nio.file.FileVisitResult.CONTINUE;
            }

            @Override
            public java.nio.file.FileVisitResult visitFileFailed(Path file, IOException e) {
              return java.nio.file.FileVisitResult.CONTINUE;
            }
          });
    } catch (IOException e) {
      // best effort
    }
    removed.sort(MemoryStorage::byteOrder);
    return removed;
  }

  /**
   * Whether the writer of temporary file {@code .sinkcoord-tmp.<rest>} is gone: {@code rest} is
   * {@code <pid>.<digits>} and no process has that pid (the Rust host's rule; our own files and
   * other names are kept).
   */
  private static boolean writerIsDead(String rest) {
    int dot = rest.indexOf('.');
    if (dot <= 0 || dot > 10 || dot == rest.length() - 1) {
      return false;
    }
    for (int i = 0; i < rest.length(); i++) {
      char ch = rest.charAt(i);
      if (i != dot && (ch < '0' || ch > '9')) {
        return false;
      }
    }
    long pid = Long.parseLong(rest.substring(0, dot));
    if (pid <= 0 || pid > Integer.MAX_VALUE || pid == ProcessHandle.current().pid()) {
      return false;
    }
    return ProcessHandle.of(pid).isEmpty();
  }

  public Path root() {
    return root;
  }

  /** The bound on one value outside {@code hint/}. */
  public long maxValueBytes() {
    return maxValueBytes;
  }

  private long limit(String key) {
    return key.startsWith("hint/") ? Math.min(maxValueBytes, MAX_HINT_BYTES) : maxValueBytes;
  }

  /**
   * The segments of a key (or of a prefix, whose last segment may be partial or empty); the key
   * rules of every backend, also applied by {@link MemoryStorage}.
   */
  static String[] check(String what, String s, boolean prefix) throws BackendException {
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

  private static BackendException io(String what, String key, IOException e) {
    return new BackendException(
        BackendException.Kind.IO, "cannot " + what + " \"" + key + "\": " + e, e);
  }

  private BackendException linkError(String what, String key, String path) {
    return BackendException.invalidKey(
        what + " \"" + key + "\": \"" + path + "\" under the table root " + root
            + " is a symbolic link (links are not followed)");
  }

  private BackendException specialError(String key, BasicFileAttributes a) {
    String kind = a.isDirectory() ? "directory" : "special file (FIFO, device or socket)";
    return BackendException.invalidKey(
        "key \"" + key + "\": \"" + key + "\" under the table root " + root
            + " is not a regular file (" + kind + ")");
  }

  /** The attributes of {@code p} without following a link; null when it does not exist. */
  private static BasicFileAttributes lstat(Path p) throws IOException {
    try {
      return Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
    } catch (NoSuchFileException | NotDirectoryException e) {
      return null;
    } catch (FileSystemException e) {
      // A name longer than the file system takes cannot exist (the Rust host's reading).
      if (p.getFileName().toString().getBytes(StandardCharsets.UTF_8).length > NAME_MAX) {
        return null;
      }
      throw e;
    }
  }

  /**
   * The directory {@code dirs} below the root, checked one level at a time without following
   * links; with {@code create}, missing levels are made and their parent fsynced. Null when a
   * level is missing or a file is in the way (without {@code create}).
   */
  private Path dir(String what, String key, String[] dirs, int count, boolean create)
      throws BackendException, IOException {
    Path p = root;
    StringBuilder rel = new StringBuilder();
    for (int i = 0; i < count; i++) {
      Path parent = p;
      p = p.resolve(dirs[i]);
      rel.append(i == 0 ? "" : "/").append(dirs[i]);
      BasicFileAttributes a = lstat(p);
      if (a == null && create) {
        try {
          Files.createDirectory(p);
          // The new directory's own name must survive a crash too.
          syncDir(parent);
        } catch (FileAlreadyExistsException e) {
          // made by another writer meanwhile
        }
        a = lstat(p);
      }
      if (a == null) {
        return null;
      }
      if (a.isSymbolicLink()) {
        throw linkError(what, key, rel.toString());
      }
      if (!a.isDirectory()) {
        if (!create) {
          return null; // a file in the way: no key lives below it
        }
        throw new NotDirectoryException(rel + " is not a directory");
      }
    }
    return p;
  }

  /** The key's file, its directory created with {@code create}; null when it cannot exist. */
  private Path locate(String key, boolean create) throws BackendException, IOException {
    String[] segments = check("key", key, false);
    Path d = dir("key", key, segments, segments.length - 1, create);
    return d == null ? null : d.resolve(segments[segments.length - 1]);
  }

  @Override
  public byte[] get(String key) throws BackendException {
    check("key", key, false);
    try {
      Path p = locate(key, false);
      if (p == null) {
        return null;
      }
      BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class, NOFOLLOW);
      if (a.isSymbolicLink()) {
        throw linkError("key", key, key);
      }
      // Checked before the file is opened: opening a FIFO to read it waits for a writer.
      if (!a.isRegularFile()) {
        throw specialError(key, a);
      }
      long limit = limit(key);
      // Checked before a byte is read: a sparse file costs no disk.
      if (a.size() > limit) {
        throw new ValueTooLargeException(key, a.size(), limit);
      }
      try (SeekableByteChannel ch = Files.newByteChannel(p, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
        return readBounded(ch, key, limit);
      }
    } catch (NoSuchFileException | NotDirectoryException e) {
      return null;
    } catch (IOException e) {
      throw io("read", key, e);
    }
  }

  /** The whole file, never more than {@code limit + 1} bytes read (it may grow meanwhile). */
  private static byte[] readBounded(SeekableByteChannel ch, String key, long limit)
      throws IOException, ValueTooLargeException {
    long size = ch.size();
    if (size > limit) {
      throw new ValueTooLargeException(key, size, limit);
    }
    ByteBuffer buf = ByteBuffer.allocate((int) size);
    while (true) {
      if (!buf.hasRemaining()) {
        if (buf.capacity() > limit) {
          throw new ValueTooLargeException(key, buf.capacity(), limit);
        }
        // Grown since its size was read: room for the rest, at most limit + 1.
        long bigger = Math.min(limit + 1, Math.min(Integer.MAX_VALUE - 8, Math.max(2L * buf.capacity(), 65536)));
        if (bigger <= buf.capacity()) {
          throw new ValueTooLargeException(key, buf.capacity() + 1L, limit);
        }
        ByteBuffer next = ByteBuffer.allocate((int) bigger);
        buf.flip();
        next.put(buf);
        buf = next;
      }
      if (ch.read(buf) < 0) {
        break;
      }
    }
    byte[] out = new byte[buf.position()];
    buf.flip();
    buf.get(out);
    return out;
  }

  private void checkSize(String key, byte[] value) throws BackendException {
    check("key", key, false); // the key's own check comes first, as for every call
    long limit = limit(key);
    if (value.length > limit) {
      throw new ValueTooLargeException(key, value.length, limit);
    }
  }

  /** Writes {@code value} whole to a fresh temporary file in {@code dir}, fsynced; its path. */
  private static Path writeTmp(Path dir, byte[] value) throws IOException {
    for (int attempt = 1; ; attempt++) {
      // Random, so another user of the directory cannot plant the name in advance; CREATE_NEW
      // (O_EXCL, which never follows a link), so a planted name is never opened. <pid>.<digits>:
      // the Rust host's sweep of dead writers' files recognises it.
      Path tmp =
          dir.resolve(TMP_PREFIX + ProcessHandle.current().pid() + "." + Long.toUnsignedString(RANDOM.nextLong()));
      FileChannel ch;
      try {
        ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE, LinkOption.NOFOLLOW_LINKS);
      } catch (FileAlreadyExistsException e) {
        if (attempt == TMP_ATTEMPTS) {
          throw e;
        }
        continue;
      }
      try (ch) {
        // FileChannel.write may write fewer bytes than asked (a full disk): all or an error.
        ByteBuffer buf = ByteBuffer.wrap(value);
        while (buf.hasRemaining()) {
          if (ch.write(buf) <= 0 && buf.hasRemaining()) {
            throw new IOException("short write: " + buf.position() + " of " + value.length + " bytes written");
          }
        }
        ch.force(true);
      } catch (IOException | RuntimeException e) {
        // No temporary file outlives a failed write.
        Files.deleteIfExists(tmp);
        throw e;
      }
      return tmp;
    }
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
    checkSize(key, value);
    try {
      Path p = locate(key, true);
      Path tmp = writeTmp(p.getParent(), value);
      boolean created;
      try {
        // link(2) fails if the name exists, a link included (it is not followed).
        Files.createLink(p, tmp);
        created = true;
      } catch (FileAlreadyExistsException e) {
        created = false;
      } finally {
        Files.deleteIfExists(tmp);
      }
      if (created) {
        syncDir(p.getParent());
        return true;
      }
      // Only a value exists: a link or special file in the way is refused.
      BasicFileAttributes a = lstat(p);
      if (a != null && a.isSymbolicLink()) {
        throw linkError("key", key, key);
      }
      if (a != null && !a.isRegularFile()) {
        throw specialError(key, a);
      }
      return false;
    } catch (IOException e) {
      throw io("create", key, e);
    }
  }

  @Override
  public void put(String key, byte[] value) throws BackendException {
    checkSize(key, value);
    try {
      Path p = locate(key, true);
      // rename(2) would replace a link, not its target; refused anyway.
      BasicFileAttributes a = lstat(p);
      if (a != null && a.isSymbolicLink()) {
        throw linkError("key", key, key);
      }
      Path tmp = writeTmp(p.getParent(), value);
      try {
        Files.move(tmp, p, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
      } catch (IOException | RuntimeException e) {
        Files.deleteIfExists(tmp);
        throw e;
      }
      syncDir(p.getParent());
    } catch (IOException e) {
      throw io("write", key, e);
    }
  }

  @Override
  public void delete(String key) throws BackendException {
    try {
      Path p = locate(key, false);
      if (p == null) {
        return;
      }
      BasicFileAttributes a = lstat(p);
      if (a == null || a.isDirectory()) {
        return; // a directory is not a key
      }
      if (a.isSymbolicLink()) {
        throw linkError("key", key, key);
      }
      Files.deleteIfExists(p);
      syncDir(p.getParent());
    } catch (NotDirectoryException e) {
      // a parent is a file: the key does not exist
    } catch (IOException e) {
      throw io("delete", key, e);
    }
  }

  @Override
  public List<String> list(String prefix) throws BackendException {
    String[] segments = check("prefix", prefix, true);
    StringBuilder rel = new StringBuilder();
    for (int i = 0; i < segments.length - 1; i++) {
      rel.append(segments[i]).append('/');
    }
    List<String> keys = new ArrayList<>();
    try {
      Path start = dir("prefix", prefix, segments, segments.length - 1, false);
      if (start != null) {
        walk(start, rel.toString(), prefix, keys, 0);
      }
    } catch (IOException e) {
      throw io("list", prefix, e);
    }
    keys.sort(MemoryStorage::byteOrder);
    return keys;
  }

  /** How deep {@code list} descends below the root (the Rust host's bound). */
  private static final int MAX_DEPTH = 64;

  /**
   * Collects the keys under {@code dir} (key prefix {@code rel}) that start with {@code prefix}. A
   * link that would be listed or descended into is an error; temporary files and special files are
   * not keys.
   */
  private void walk(Path dir, String rel, String prefix, List<String> out, int depth)
      throws IOException, BackendException {
    try (DirectoryStream<Path> entries = Files.newDirectoryStream(dir)) {
      for (Path e : entries) {
        String name = e.getFileName().toString();
        if (name.startsWith(TMP_PREFIX)) {
          continue;
        }
        String key = rel + name;
        String sub = key + "/";
        // Only names that are keys under the prefix, or lead to them.
        if (!key.startsWith(prefix) && !prefix.startsWith(sub)) {
          continue;
        }
        BasicFileAttributes a = lstat(e);
        if (a == null) {
          continue; // removed meanwhile
        }
        if (a.isSymbolicLink()) {
          throw linkError("prefix", prefix, key);
        }
        if (a.isDirectory()) {
          if (!sub.startsWith(prefix) && !prefix.startsWith(sub)) {
            continue;
          }
          if (depth >= MAX_DEPTH) {
            throw new IOException("directories nested deeper than " + MAX_DEPTH + " levels under the table root");
          }
          walk(e, sub, prefix, out, depth + 1);
        } else if (a.isRegularFile() && key.startsWith(prefix)) {
          out.add(key);
        }
      }
    } catch (NoSuchFileException | NotDirectoryException e) {
      // removed meanwhile: nothing under it
    }
  }
}
