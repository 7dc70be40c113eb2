package io.polylock;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/**
 * Loads libpolylock_jvm: from {@code java.library.path} first (a system package, or {@code
 * -Djava.library.path=...}), else from the jar's {@code /native/<os>-<arch>/}, copied to a temporary file.
 */
final class NativeLoader {
    static final String LIBRARY = "polylock_jvm";

    private NativeLoader() {}

    static synchronized void load() {
        try {
            System.loadLibrary(LIBRARY);
            return;
        } catch (UnsatisfiedLinkError notOnLibraryPath) {
            // fall through to the copy inside the jar
        }
        String resource = "/native/" + classifier() + "/" + System.mapLibraryName(LIBRARY);
        try (InputStream in = NativeLoader.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new UnsatisfiedLinkError("polylock has no native library for " + classifier()
                        + " in its jar (" + resource + ") and none is on java.library.path");
            }
            Path file = Files.createTempFile("libpolylock_jvm-", ".so");
            file.toFile().deleteOnExit();
            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
            System.load(file.toAbsolutePath().toString());
        } catch (IOException e) {
            UnsatisfiedLinkError error = new UnsatisfiedLinkError("cannot extract polylock's native library: " + e);
            error.initCause(e);
            throw error;
        }
    }

    /** {@code linux-x86_64}, as the jar's folder names it. */
    static String classifier() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        String osName = os.contains("linux") ? "linux" : os.contains("mac") ? "macos" : os.replace(' ', '_');
        String archName = arch.equals("amd64") || arch.equals("x86_64") ? "x86_64"
                : arch.equals("aarch64") || arch.equals("arm64") ? "aarch64" : arch;
        return osName + "-" + archName;
    }
}
