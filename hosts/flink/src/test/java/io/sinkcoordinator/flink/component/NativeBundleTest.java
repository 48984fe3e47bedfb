package io.sinkcoordinator.flink.component;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import org.junit.jupiter.api.Test;

/** The JNI library bundled by the Maven build: extracted once, content-checked, private. */
class NativeBundleTest {
    @Test
    void theBundledLibraryIsExtractedOnceAndCheckedAgainstTheJar() throws Exception {
        byte[] jar;
        try (InputStream in = NativeBundle.class.getResourceAsStream(NativeBundle.resource())) {
            assumeTrue(in != null, "no JNI library bundled (target/release has none)");
            jar = in.readAllBytes();
        }
        File first = NativeBundle.extract();
        assertNotNull(first);
        assertArrayEquals(jar, Files.readAllBytes(first.toPath()));
        assertEquals("rwx------",
                PosixFilePermissions.toString(Files.getPosixFilePermissions(first.toPath().getParent())));
        // a second load reuses the file; a damaged one is replaced, never loaded (a new file in
        // its place, not written into: this JVM may have the library mapped already)
        assertEquals(first, NativeBundle.extract());
        Files.delete(first.toPath());
        Files.write(first.toPath(), new byte[] {1, 2, 3});
        File again = NativeBundle.extract();
        assertArrayEquals(jar, Files.readAllBytes(again.toPath()));
        // and the library loads from there: a JNI call works without -Dsinkcoord.native.library
        assumeTrue(System.getProperty("sinkcoord.native.library", "").isEmpty());
        try (ComponentWriter w = new ComponentWriter(0, ComponentRuntime.JNI)) {
            assertEquals(1, w.report(1, new byte[][] {{7}}, null, false).checkpoint());
        }
        Path dir = first.toPath().getParent();
        assertEquals(true, Files.isDirectory(dir));
    }
}
