package dev.sema.bench.redis;

import java.io.File;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The Redis the comparison runs against: either a throw-away {@code redis-server} started here on a random
 * loopback port, without persistence, or one named by {@code -Dsema.redis.uri} or {@code SEMA_REDIS_URI}
 * ({@code redis://host:port}, no password, no TLS), which is then shared with whatever else uses it: its
 * command statistics are reset by the comparison.
 *
 * <p>The binary is {@code $SEMA_REDIS_SERVER}, else {@code redis-server} on the {@code PATH}, else
 * {@code /usr/bin} or {@code /usr/local/bin}.
 */
public final class LocalRedis implements AutoCloseable {
    private final String host;
    private final int port;
    private final Process process;
    private final Path dir;

    private LocalRedis(String host, int port, Process process, Path dir) {
        this.host = host;
        this.port = port;
        this.process = process;
        this.dir = dir;
    }

    /** The URI given by {@code -Dsema.redis.uri} or {@code SEMA_REDIS_URI}, if any. */
    public static Optional<String> givenUri() {
        String uri = System.getProperty("sema.redis.uri");
        if (uri == null || uri.isBlank()) {
            uri = System.getenv("SEMA_REDIS_URI");
        }
        return uri == null || uri.isBlank() ? Optional.empty() : Optional.of(uri.trim());
    }

    /** The {@code redis-server} binary to start, if there is one. */
    public static Optional<Path> findBinary() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("SEMA_REDIS_SERVER");
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

    /** Uses the server at {@code uri} ({@code redis://host:port}); nothing is started or stopped. */
    public static LocalRedis external(String uri) {
        java.net.URI u = java.net.URI.create(uri);
        if (!"redis".equals(u.getScheme()) || u.getHost() == null) {
            throw new IllegalArgumentException("expected redis://host:port, got " + uri);
        }
        return new LocalRedis(u.getHost(), u.getPort() < 0 ? 6379 : u.getPort(), null, null);
    }

    /** Starts {@code binary} on a free loopback port (a few ports are tried should one be taken meanwhile). */
    public static LocalRedis start(Path binary) throws IOException, InterruptedException {
        Path dir = Files.createTempDirectory("sema-redis-bench");
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            int port;
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                port = s.getLocalPort();
            }
            try {
                return new LocalRedis("127.0.0.1", port, launch(binary, dir, port), dir);
            } catch (IOException e) {
                last = e;
            }
        }
        throw last;
    }

    private static Process launch(Path binary, Path dir, int port) throws IOException, InterruptedException {
        Path log = dir.resolve("redis-" + port + ".log");
        ProcessBuilder pb = new ProcessBuilder(binary.toString(), "--bind", "127.0.0.1", "--port",
                Integer.toString(port), "--save", "", "--appendonly", "no", "--dir", dir.toString(),
                "--daemonize", "no", "--protected-mode", "yes", "--logfile", "");
        pb.redirectErrorStream(true);
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        Runtime.getRuntime().addShutdownHook(new Thread(p::destroyForcibly));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (System.nanoTime() - deadline < 0) {
            if (!p.isAlive()) {
                throw new IOException("redis-server exited with " + p.exitValue() + ": " + Files.readString(log));
            }
            try (RawRedis r = RawRedis.connect("127.0.0.1", port)) {
                if ("PONG".equals(r.call("PING"))) {
                    return p;
                }
            } catch (IOException notYet) {
                // not listening yet
            }
            p.waitFor(20, TimeUnit.MILLISECONDS);
        }
        p.destroyForcibly();
        throw new IOException("redis-server did not answer PING within 10 s: " + Files.readString(log));
    }

    String host() {
        return host;
    }

    int port() {
        return port;
    }

    /** Whether the server was started here. */
    public boolean started() {
        return process != null;
    }

    /** {@code redis://host:port}. */
    public String uri() {
        return "redis://" + host + ":" + port;
    }

    @Override
    public void close() throws InterruptedException {
        if (process == null) {
            return;
        }
        process.destroy();
        if (!process.waitFor(5, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(5, TimeUnit.SECONDS);
        }
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
