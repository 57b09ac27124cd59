package dev.sema.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away {@code redis-server} on a random loopback port, without persistence.
 *
 * <p>Which binary: an installed {@code redis-server} ({@code SEMA_REDIS_SERVER}, the PATH,
 * {@code /usr/bin}, {@code /usr/local/bin}), else the Redis 6.2 binary for this OS and architecture
 * bundled in the {@code embedded-redis} test dependency, extracted to a temporary file. Test classes that
 * implement {@link OnRedis62} always get the bundled 6.2 binary, so every build runs them on Redis 6.2
 * as well as on the installed version. {@code SEMA_REDIS_SERVER=bundled} makes every test class use the
 * bundled binary, as on a machine where nothing is installed. Tests are skipped (not failed) only when
 * there is no binary at all.
 */
final class RedisServer implements AutoCloseable {

    /** Marks a test class that runs against the bundled Redis 6.2 server instead of the installed one. */
    interface OnRedis62 {
    }

    private static final String MISSING_INSTALLED = "no redis-server binary found (PATH, /usr/bin, /usr/local/bin"
            + " or $SEMA_REDIS_SERVER), and embedded-redis bundles none for this platform ("
            + System.getProperty("os.name") + ", " + System.getProperty("os.arch") + "): Redis integration test"
            + " skipped; install it with 'apt-get install redis-server'";
    private static final String MISSING_BUNDLED = "embedded-redis bundles no Redis 6.2 binary for this platform ("
            + System.getProperty("os.name") + ", " + System.getProperty("os.arch") + "): Redis 6.2 test skipped";

    private static Optional<Path> bundled;

    private final Path binary;
    private final Path dir;
    private final int port;
    private final List<String> extraArgs;
    private Process process;

    private RedisServer(Path binary, Path dir, int port, List<String> extraArgs) {
        this.binary = binary;
        this.dir = dir;
        this.port = port;
        this.extraArgs = extraArgs;
    }

    /** An installed redis-server, if there is one (and {@code SEMA_REDIS_SERVER} is not {@code bundled}). */
    static Optional<Path> installedBinary() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("SEMA_REDIS_SERVER");
        if ("bundled".equals(env)) {
            return Optional.empty();
        }
        if (env != null && !env.isBlank()) {
            candidates.add(Path.of(env));
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String d : path.split(java.io.File.pathSeparator)) {
                if (!d.isEmpty()) {
                    candidates.add(Path.of(d, "redis-server"));
                }
            }
        }
        candidates.add(Path.of("/usr/bin/redis-server"));
        candidates.add(Path.of("/usr/local/bin/redis-server"));
        return candidates.stream().filter(Files::isRegularFile).filter(Files::isExecutable).findFirst();
    }

    /** The class-path resource of embedded-redis holding the Redis 6.2 binary for this platform. */
    static Optional<String> bundledResource() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
        boolean x86 = arch.equals("x86") || arch.equals("i386") || arch.equals("i686");
        if (os.startsWith("linux")) {
            return x64 ? Optional.of("redis-server-6.2.6-v5-linux-amd64")
                    : arm64 ? Optional.of("redis-server-6.2.7-linux-arm64")
                    : x86 ? Optional.of("redis-server-6.2.7-linux-386")
                    : Optional.empty();
        }
        if (os.startsWith("mac")) {
            return x64 ? Optional.of("redis-server-6.2.6-v5-darwin-amd64")
                    : arm64 ? Optional.of("redis-server-6.2.6-v5-darwin-arm64")
                    : Optional.empty();
        }
        return Optional.empty(); // Windows: only a Redis 5.0 port is bundled, older than we support
    }

    /** The bundled Redis 6.2 binary, extracted (once per JVM) to an executable temporary file. */
    static synchronized Optional<Path> bundledBinary() throws IOException {
        if (bundled == null) {
            Optional<String> resource = bundledResource();
            Optional<Path> found = Optional.empty();
            if (resource.isPresent()) {
                try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(resource.get())) {
                    if (in != null) {
                        Path file = Files.createTempFile("sema-" + resource.get() + "-", "");
                        file.toFile().deleteOnExit();
                        Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                        Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
                        found = Optional.of(file);
                    }
                }
            }
            bundled = found;
        }
        return bundled;
    }

    /** The binary {@code testClass} runs against: see the class comment. */
    static Optional<Path> binaryFor(Class<?> testClass) throws IOException {
        if (OnRedis62.class.isAssignableFrom(testClass)) {
            return bundledBinary();
        }
        Optional<Path> installed = installedBinary();
        return installed.isPresent() ? installed : bundledBinary();
    }

    /** Why {@code testClass} is skipped when {@link #binaryFor} finds nothing. */
    static String missing(Class<?> testClass) {
        return OnRedis62.class.isAssignableFrom(testClass) ? MISSING_BUNDLED : MISSING_INSTALLED;
    }

    /** Starts a server for {@code testClass}, or returns null if there is no binary (callers then skip). */
    static RedisServer startFor(Class<?> testClass) throws IOException, InterruptedException {
        Optional<Path> binary = binaryFor(testClass);
        return binary.isEmpty() ? null : start(binary.get(), List.of());
    }

    /**
     * Starts {@code binary} with {@code extraArgs} appended to the standard ones. With
     * {@code --cluster-enabled yes} among them, the port is chosen so that the cluster bus port (port +
     * 10000) is free too.
     */
    static RedisServer start(Path binary, List<String> extraArgs) throws IOException, InterruptedException {
        boolean cluster = extraArgs.contains("--cluster-enabled");
        Path dir = Files.createTempDirectory("sema-redis-test");
        IOException last = null;
        for (int attempt = 0; attempt < 10; attempt++) {
            RedisServer server = new RedisServer(binary, dir, freePort(cluster), extraArgs);
            try {
                server.launch();
                return server;
            } catch (IOException e) {
                last = e; // most likely the port was taken in between: try another
            }
        }
        throw last;
    }

    private static int freePort(boolean withBusPort) throws IOException {
        for (;;) {
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                int port = s.getLocalPort();
                if (!withBusPort) {
                    return port;
                }
                if (port + 10000 <= 65535) {
                    try (ServerSocket bus = new ServerSocket(port + 10000, 1, InetAddress.getLoopbackAddress())) {
                        return port;
                    } catch (IOException taken) {
                        // try another
                    }
                }
            }
        }
    }

    private void launch() throws IOException, InterruptedException {
        Path log = dir.resolve("redis-" + port + ".log");
        List<String> command = new ArrayList<>(List.of(binary.toString(), "--bind", "127.0.0.1", "--port",
                Integer.toString(port), "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                "--daemonize", "no", "--protected-mode", "yes", "--logfile", ""));
        for (String a : extraArgs) {
            command.add(a.replace("{port}", Integer.toString(port)));
        }
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - deadline < 0) {
            if (!p.isAlive()) {
                throw new IOException("redis-server exited with " + p.exitValue() + ": " + Files.readString(log));
            }
            if (ping()) {
                process = p;
                return;
            }
            p.waitFor(20, TimeUnit.MILLISECONDS);
        }
        p.destroyForcibly();
        throw new IOException("redis-server did not answer PING within 10 s: " + Files.readString(log));
    }

    private boolean ping() {
        try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
            s.setSoTimeout(1000);
            OutputStream out = s.getOutputStream();
            out.write("PING\r\n".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[7];
            int n = in.readNBytes(buf, 0, 7);
            return n == 7 && new String(buf, StandardCharsets.US_ASCII).startsWith("+PONG");
        } catch (IOException e) {
            return false;
        }
    }

    String uri() {
        return "redis://127.0.0.1:" + port + "?timeout=5s";
    }

    int port() {
        return port;
    }

    Path binary() {
        return binary;
    }

    /** Stops the server without killing it (SIGSTOP): it answers nothing until {@link #resume()}. */
    void pause() throws IOException, InterruptedException {
        signal("-STOP");
    }

    /** Lets a paused server run again (SIGCONT): it then runs the commands that queued meanwhile. */
    void resume() throws IOException, InterruptedException {
        signal("-CONT");
    }

    private void signal(String which) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", which, Long.toString(process.pid())).inheritIO().start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill " + which + " " + process.pid() + " failed");
        }
    }

    /** Kills the server (SIGKILL): everything it held is gone. */
    void stop() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            process = null;
        }
    }

    /** Kills the server and starts a new, empty one on the same port. */
    void restart() throws IOException, InterruptedException {
        stop();
        IOException last = null;
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                launch();
                return;
            } catch (IOException e) {
                last = e; // the killed server's port may still be held for a moment
            }
        }
        throw last;
    }

    @Override
    public void close() throws InterruptedException {
        stop();
        try (var files = Files.list(dir)) {
            for (Path f : (Iterable<Path>) files::iterator) {
                Files.deleteIfExists(f);
            }
            Files.deleteIfExists(dir);
        } catch (IOException ignored) {
            // a temp directory left behind is harmless
        }
    }
}
