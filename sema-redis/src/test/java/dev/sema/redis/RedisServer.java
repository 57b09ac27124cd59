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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * A throw-away {@code redis-server} on a random loopback port, without persistence. Tests that use it
 * are skipped (not failed) when no {@code redis-server} binary is installed: set {@code SEMA_REDIS_SERVER}
 * to its path, or put it on the PATH ({@code apt-get install redis-server}).
 */
final class RedisServer implements AutoCloseable {
    private final Path binary;
    private final Path dir;
    private final int port;
    private Process process;

    private RedisServer(Path binary, Path dir, int port) {
        this.binary = binary;
        this.dir = dir;
        this.port = port;
    }

    static Optional<Path> findBinary() {
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv("SEMA_REDIS_SERVER");
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
        return candidates.stream().filter(Files::isExecutable).findFirst();
    }

    static final String MISSING = "no redis-server binary found (PATH, /usr/bin, /usr/local/bin or "
            + "$SEMA_REDIS_SERVER): Redis integration test skipped; install it with 'apt-get install redis-server'";

    /** Starts a server, or returns null if there is no redis-server binary (callers then skip). */
    static RedisServer startIfInstalled() throws IOException, InterruptedException {
        Optional<Path> binary = findBinary();
        if (binary.isEmpty()) {
            return null;
        }
        Path dir = Files.createTempDirectory("sema-redis-test");
        IOException last = null;
        for (int attempt = 0; attempt < 5; attempt++) {
            RedisServer server = new RedisServer(binary.get(), dir, freePort());
            try {
                server.launch();
                return server;
            } catch (IOException e) {
                last = e; // most likely the port was taken in between: try another
            }
        }
        throw last;
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return s.getLocalPort();
        }
    }

    private void launch() throws IOException, InterruptedException {
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
