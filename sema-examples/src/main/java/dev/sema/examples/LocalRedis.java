package dev.sema.examples;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * The Redis the demo's distributed part uses: the one {@code SEMA_REDIS_URI} names, if set; otherwise a
 * {@code redis-server} of our own on a random loopback port, without persistence, stopped by
 * {@link #close()} (and by a shutdown hook if the JVM exits first). The binary is the one
 * {@code SEMA_REDIS_SERVER} names, else the first {@code redis-server} on the {@code PATH} (or in
 * {@code /usr/bin}, {@code /usr/local/bin}), else the one bundled in the {@code embedded-redis} jar,
 * extracted to a temporary directory: so the demo runs on a machine with no Redis installed.
 * {@code SEMA_REDIS_SERVER=bundled} skips the installed one.
 */
final class LocalRedis implements AutoCloseable {
    private static final Duration START_TIMEOUT = Duration.ofSeconds(10);

    private final String uri;
    private final String description;
    private final boolean external;
    private final Process process;
    private final Path dir;
    private final Thread hook;

    private LocalRedis(String uri, String description, boolean external, Process process, Path dir, Thread hook) {
        this.uri = uri;
        this.description = description;
        this.external = external;
        this.process = process;
        this.dir = dir;
        this.hook = hook;
    }

    /**
     * Returns the configured Redis, or starts one; empty if there is neither a configured Redis nor a
     * {@code redis-server} binary for this platform.
     */
    static Optional<LocalRedis> obtain() throws IOException, InterruptedException {
        String configured = System.getenv("SEMA_REDIS_URI");
        if (configured != null && !configured.isBlank()) {
            return Optional.of(new LocalRedis(configured, "the Redis at SEMA_REDIS_URI", true, null, null, null));
        }
        Optional<Path> installed = installedBinary();
        if (installed.isPresent()) {
            return Optional.of(start(installed.get(), Files.createTempDirectory("sema-demo-redis"),
                    "redis-server " + version(installed.get()) + " (" + installed.get() + ")"));
        }
        Optional<String> bundled = bundledResource();
        if (bundled.isEmpty()) {
            return Optional.empty();
        }
        Path dir = Files.createTempDirectory("sema-demo-redis");
        Path binary = extract(bundled.get(), dir);
        return Optional.of(start(binary, dir, "redis-server " + version(binary) + " bundled in embedded-redis ("
                + bundled.get() + ")"));
    }

    /** The {@code redis-server} named by {@code SEMA_REDIS_SERVER}, on the PATH, or in the usual places. */
    static Optional<Path> installedBinary() {
        String env = System.getenv("SEMA_REDIS_SERVER");
        if ("bundled".equals(env)) {
            return Optional.empty();
        }
        List<Path> candidates = new ArrayList<>();
        if (env != null && !env.isBlank()) {
            candidates.add(Path.of(env));
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(File.pathSeparator)) {
                if (!d.isEmpty()) {
                    candidates.add(Path.of(d, "redis-server"));
                }
            }
        }
        candidates.add(Path.of("/usr/bin/redis-server"));
        candidates.add(Path.of("/usr/local/bin/redis-server"));
        return candidates.stream().filter(Files::isExecutable).findFirst();
    }

    /** The name of the binary the embedded-redis jar bundles for this OS and architecture, if any. */
    static Optional<String> bundledResource() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
        String name = null;
        if (os.contains("linux")) {
            name = x64 ? "redis-server-6.2.6-v5-linux-amd64" : arm64 ? "redis-server-6.2.7-linux-arm64"
                    : arch.matches("x86|i[3-6]86") ? "redis-server-6.2.7-linux-386" : null;
        } else if (os.contains("mac")) {
            name = x64 ? "redis-server-6.2.6-v5-darwin-amd64" : arm64 ? "redis-server-6.2.6-v5-darwin-arm64" : null;
        }
        return Optional.ofNullable(name).filter(n -> LocalRedis.class.getClassLoader().getResource(n) != null);
    }

    /** Copies a bundled binary out of its jar into {@code dir} and makes it executable. */
    static Path extract(String resource, Path dir) throws IOException {
        URL url = LocalRedis.class.getClassLoader().getResource(resource);
        if (url == null) {
            throw new IOException(resource + " is not on the class path (the embedded-redis jar)");
        }
        Path binary = dir.resolve("redis-server");
        try (InputStream in = url.openStream()) {
            Files.copy(in, binary, StandardCopyOption.REPLACE_EXISTING);
        }
        if (!binary.toFile().setExecutable(true, true)) {
            throw new IOException("cannot make " + binary + " executable");
        }
        return binary;
    }

    /** The version a {@code redis-server} binary reports, e.g. {@code 7.0.15}, or "?" if it does not say. */
    static String version(Path binary) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            p.destroyForcibly();
        }
        int v = out.indexOf("v=");
        return v < 0 ? "?" : out.substring(v + 2).split("\\s")[0];
    }

    /** Starts {@code binary} on a free loopback port, trying another port if that one was taken meanwhile. */
    static LocalRedis start(Path binary, Path dir, String what) throws IOException, InterruptedException {
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port = freePort();
            Path log = dir.resolve("redis-" + port + ".log");
            ProcessBuilder pb = new ProcessBuilder(binary.toString(), "--bind", "127.0.0.1", "--port",
                    Integer.toString(port), "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                    "--daemonize", "no", "--protected-mode", "yes", "--logfile", "");
            pb.redirectErrorStream(true);
            pb.redirectOutput(log.toFile());
            Process p = pb.start();
            Thread hook = new Thread(p::destroyForcibly, "sema-demo-redis-stop");
            Runtime.getRuntime().addShutdownHook(hook);
            long deadline = System.nanoTime() + START_TIMEOUT.toNanos();
            while (p.isAlive() && System.nanoTime() - deadline < 0 && !ping(port)) {
                p.waitFor(20, TimeUnit.MILLISECONDS);
            }
            if (p.isAlive() && ping(port)) {
                return new LocalRedis("redis://127.0.0.1:" + port, what + " on 127.0.0.1:" + port, false, p, dir,
                        hook);
            }
            p.destroyForcibly();
            p.waitFor(10, TimeUnit.SECONDS);
            Runtime.getRuntime().removeShutdownHook(hook);
            last = new IOException(what + " did not start on port " + port + ": " + tail(log));
        }
        deleteTree(dir);
        throw last;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private static boolean ping(int port) {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            byte[] reply = s.getInputStream().readNBytes(7);
            return new String(reply, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    private static String tail(Path log) {
        try {
            String text = Files.readString(log);
            return text.length() > 2000 ? text.substring(text.length() - 2000) : text;
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    String uri() {
        return uri;
    }

    String description() {
        return description;
    }

    /** Whether this Redis was configured rather than started here (so it must be left as it was found). */
    boolean external() {
        return external;
    }

    /** Whether the server started here is running (always true for a configured one). */
    boolean isAlive() {
        return process == null || process.isAlive();
    }

    /** Stops the server started here (SIGKILL: it keeps nothing) and deletes its directory. */
    @Override
    public void close() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        try {
            Runtime.getRuntime().removeShutdownHook(hook);
        } catch (IllegalStateException shuttingDown) {
            // the hook runs anyway, and finds the server stopped
        }
        deleteTree(dir);
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(f);
            }
        } catch (IOException ignored) {
            // a temporary directory left behind is harmless
        }
    }
}
