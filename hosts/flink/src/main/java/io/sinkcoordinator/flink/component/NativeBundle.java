package io.sinkcoordinator.flink.component;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Locale;

/**
 * The JNI library inside the connector's jar: {@code native/<os>-<arch>/<library file>} next to
 * this class (the Maven build copies {@code target/release/libsinkcoord_flink.so} there), written
 * out once to a private directory and loaded from there, so no path has to be set by hand on a
 * JobManager or TaskManager.
 *
 * <p>Why content-named and checked: several JVMs of a machine (or class loaders of one) share the
 * file, a half-written file must never be loaded (it is written under a temporary name, then
 * renamed), and a file another user planted at a predictable path must not be either (the
 * directory is the user's own, {@code rwx------}, and an existing file is loaded only if its bytes
 * are the jar's).
 */
final class NativeBundle {
    private NativeBundle() {}

    /** The platform's directory name: {@code linux-x86_64}, {@code macos-aarch64}, ... */
    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        os = os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os.contains("win") ? "windows" : os;
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        arch = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return os + "-" + arch;
    }

    /** The resource name, relative to this class. */
    static String resource() {
        return "native/" + platform() + "/" + System.mapLibraryName("sinkcoord_flink");
    }

    /** The extracted library, or null when the jar has none for this platform. */
    static File extract() {
        byte[] bytes;
        try (InputStream in = NativeBundle.class.getResourceAsStream(resource())) {
            if (in == null) {
                return null;
            }
            bytes = in.readAllBytes();
        } catch (IOException e) {
            throw linkError("cannot read " + resource() + " from the jar", e);
        }
        String sha;
        try {
            sha = HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(bytes)).substring(0, 16);
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError("every JDK has SHA-256", e);
        }
        String user = System.getProperty("user.name", "user").replaceAll("[^A-Za-z0-9_.-]", "_");
        Path dir = Path.of(System.getProperty("java.io.tmpdir"), "sinkcoord-flink-" + user);
        Path file = dir.resolve(sha + "-" + System.mapLibraryName("sinkcoord_flink"));
        try {
            if (!Files.isDirectory(dir)) {
                try {
                    Files.createDirectories(
                            dir, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rwx------")));
                } catch (UnsupportedOperationException e) {
                    Files.createDirectories(dir); // not POSIX (Windows): the user's temp dir is private
                }
            }
            if (Files.isRegularFile(file) && Arrays.equals(Files.readAllBytes(file), bytes)) {
                return file.toFile();
            }
            Path tmp = Files.createTempFile(dir, ".extract-", ".tmp");
            Files.write(tmp, bytes);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            return file.toFile();
        } catch (IOException e) {
            throw linkError("cannot extract the JNI library to " + file, e);
        }
    }

    private static UnsatisfiedLinkError linkError(String message, Throwable cause) {
        UnsatisfiedLinkError e = new UnsatisfiedLinkError(message + ": " + cause);
        e.initCause(cause);
        return e;
    }
}
