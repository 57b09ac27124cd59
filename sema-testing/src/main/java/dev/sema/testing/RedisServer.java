package dev.sema.testing;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.stream.Stream;

/**
 * A {@code redis-server} of our own on a random loopback port, for tests and tools (never published): started,
 * paused, killed and restarted on the same port, and gone at the latest when the JVM exits.
 *
 * <p><b>Which binary.</b> {@link Source#find()} looks for one: an installed {@code redis-server}
 * ({@code $SEMA_REDIS_SERVER}, then the {@code PATH}, {@code /usr/bin}, {@code /usr/local/bin}), or the Redis 6.2
 * binary for this OS and architecture bundled in the {@code embedded-redis} jar, extracted once per JVM to an
 * executable temporary file. {@code SEMA_REDIS_SERVER=bundled} hides the installed one, as on a machine where
 * nothing is installed. {@link Source#missing()} says why nothing was found; a test then skips, it does not fail.
 *
 * <p><b>Start.</b> The server listens on {@code 127.0.0.1} only, on a random free port below the kernel's
 * ephemeral range (so that no client's outgoing connection takes it while the server is down for a restart),
 * with its own directory, no RDB snapshots and, unless {@link Builder#appendOnly()}, no append-only file. A
 * start returns once the server that answers on the port is this process's child ({@code INFO server}) and has
 * loaded its data ({@code PING} answers {@code +PONG}, not {@code -LOADING}); should another process take the
 * port in between, the log says {@code Address already in use} and the next port is tried. Every start error carries the end of the
 * server's log. {@link Builder#startTimeout(Duration)} bounds a start, a restart and a stop (10 s by default).
 *
 * <p><b>Life.</b> {@link #stop()} asks for {@code SHUTDOWN NOSAVE} (the append-only file is flushed), then
 * signals; {@link #kill()} sends SIGKILL, as a crash would; {@link #restart()} kills the server if it still runs
 * and starts it again on the same port, in the same directory: from its append-only file with
 * {@link Builder#appendOnly()}, else empty. {@link #pause()} and {@link #resume()} send SIGSTOP and SIGCONT: a
 * paused server accepts connections and queues commands but runs none. {@link #close()} stops the server and
 * deletes the directory it made. A JVM shutdown hook kills every server not closed yet and deletes their
 * directories.
 *
 * <p><b>Threads.</b> The methods that act on the process ({@code pause} to {@code close}) are serialized; the
 * others may be called from any thread at any time, e.g. while another thread restarts the server.
 *
 * <p><b>Examples.</b>
 * {@snippet :
 * RedisServer.Binary binary = RedisServer.Source.INSTALLED_OR_BUNDLED.find()
 *         .orElseThrow(() -> new IllegalStateException(RedisServer.Source.INSTALLED_OR_BUNDLED.missing()));
 * try (RedisServer redis = RedisServer.builder(binary).appendOnly().start()) {
 *     connectTo(redis.uri()); // redis://127.0.0.1:port
 *     redis.restart();        // killed, and back on the same port with every acknowledged write
 * }
 * }
 */
public final class RedisServer implements AutoCloseable {
    private static final String HOST = "127.0.0.1";
    private static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(10);
    /** Fresh ports tried by one start, should other processes keep taking them first. */
    private static final int PORT_ATTEMPTS = 20;
    /** Lines of the server's log quoted in an error. */
    private static final int TAIL_LINES = 20;
    private static final String PORT_TAKEN = "Address already in use";
    private static final String ENV_SERVER = "SEMA_REDIS_SERVER";
    private static final String PLACES = "$" + ENV_SERVER + ", PATH, /usr/bin, /usr/local/bin";

    /** Servers started and not closed yet: the shutdown hook kills them. */
    private static final Set<RedisServer> LIVE = ConcurrentHashMap.newKeySet();
    private static final Map<Path, String> VERSIONS = new ConcurrentHashMap<>();
    private static final ReentrantLock BUNDLED_LOCK = new ReentrantLock();
    private static Optional<Binary> bundled; // guarded by BUNDLED_LOCK; null until looked for

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(RedisServer::killAll, "sema-redis-server-stop"));
    }

    private final Binary binary;
    private final Options options;
    private final Path dir;
    private final boolean ownsDir;
    private final int port;
    private final Path log;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile Process process;
    private volatile long pid;
    private boolean paused;
    private boolean closed;

    /*
     * Implementation overview
     *
     * One object per server, for its whole life: binary, options, directory and port never change, so a
     * restart is a new process with the same command line (and, for a Sentinel, the configuration file the
     * previous process rewrote). The log file is appended to by every process; a start reads only what its
     * own process wrote (from the log's length when it began), so an "Address already in use" of an earlier
     * process is not taken for a new one's.
     *
     * Invariants:
     * I1: process != null iff a process was started by this object and not yet seen to exit or killed here;
     *     once its start has returned, pid is the pid that the server itself reported (the process's, or a
     *     descendant's when a wrapper forks).
     * I2: this is in LIVE from before its first process starts until close(): the shutdown hook sees every
     *     process that may still run.
     * I3: paused implies process != null.
     *
     * Field       read               written           guard
     * process     volatile (any)     under lock        lock (the hook reads it without)
     * pid         volatile (any)     under lock        lock
     * paused      under lock         under lock        lock
     * closed      under lock         under lock        lock
     * bundled     under BUNDLED_LOCK under BUNDLED_LOCK BUNDLED_LOCK
     *
     * No monitor is held across I/O or waiting (virtual threads would pin their carrier): ReentrantLock.
     */

    /**
     * A {@code redis-server} executable and the version it reports.
     *
     * @param path the executable
     * @param version what {@code redis-server --version} says, e.g. {@code 7.0.15}; "?" if it does not
     * @param bundled whether it is the Redis 6.2 of the {@code embedded-redis} jar, extracted
     */
    public record Binary(Path path, String version, boolean bundled) {
        /** Describes the binary as a report would: {@code redis-server 7.0.15 (/usr/bin/redis-server)}. */
        @Override
        public String toString() {
            return "redis-server " + version + (bundled ? " bundled in embedded-redis" : "") + " (" + path + ")";
        }
    }

    /** Where {@link #find()} looks for a {@code redis-server}. */
    public enum Source {
        /** The installed one, else the bundled Redis 6.2; only the bundled one when {@code SEMA_REDIS_SERVER=bundled}. */
        INSTALLED_OR_BUNDLED,
        /** The installed one only; none when {@code SEMA_REDIS_SERVER=bundled}. */
        INSTALLED,
        /** The Redis 6.2 bundled in the {@code embedded-redis} jar only: the Redis 6.2 runs. */
        BUNDLED;

        /**
         * Finds the binary.
         *
         * @return the binary, or empty if there is none: {@link #missing()} says why
         * @throws IOException if the bundled binary cannot be extracted
         */
        public Optional<Binary> find() throws IOException {
            return switch (this) {
                case INSTALLED -> installed();
                case BUNDLED -> bundled();
                case INSTALLED_OR_BUNDLED -> {
                    Optional<Binary> installed = installed();
                    yield installed.isPresent() ? installed : bundled();
                }
            };
        }

        /**
         * Why {@link #find()} finds nothing, and what to do about it.
         *
         * @return one sentence, without a final period
         */
        public String missing() {
            String noInstalled = bundledForced() ? ENV_SERVER + "=bundled hides the installed redis-server"
                    : "no redis-server binary found (" + PLACES + ")";
            String install = "; install one with 'apt-get install redis-server'";
            return switch (this) {
                case INSTALLED -> noInstalled + (bundledForced() ? "" : install);
                case BUNDLED -> missingBundled();
                case INSTALLED_OR_BUNDLED -> noInstalled + ", and " + missingBundled() + install;
            };
        }
    }

    /** What a {@link Builder} collects: see its methods. */
    private record Options(List<String> wrapper, boolean appendOnly, boolean cluster, int replicaOf,
            List<String> sentinel, List<String> args, Path directory, Duration timeout) {
    }

    /** The options of a server to start: {@link RedisServer#builder(Binary)}. */
    public static final class Builder {
        private final Binary binary;
        private List<String> wrapper = List.of();
        private boolean appendOnly;
        private boolean cluster;
        private int replicaOf = -1;
        private List<String> sentinel;
        private final List<String> args = new ArrayList<>();
        private Path directory;
        private Duration timeout = DEFAULT_TIMEOUT;

        private Builder(Binary binary) {
            this.binary = binary;
        }

        /**
         * Turns the append-only file on, with {@code appendfsync always}: every write the server acknowledged is
         * in the file, so {@link RedisServer#restart()} brings it back even after {@link RedisServer#kill()}.
         *
         * @return this builder
         */
        public Builder appendOnly() {
            appendOnly = true;
            return this;
        }

        /**
         * Makes the server a Redis Cluster node ({@code --cluster-enabled yes}, its node file in its directory),
         * on a port whose cluster bus port ({@code port + 10000}) is free too.
         *
         * @return this builder
         */
        public Builder cluster() {
            cluster = true;
            return this;
        }

        /**
         * Makes the server a replica of the server on loopback port {@code primaryPort}
         * ({@code --replicaof 127.0.0.1 primaryPort}).
         *
         * @param primaryPort the primary's port
         * @return this builder
         */
        public Builder replicaOf(int primaryPort) {
            if (primaryPort <= 0 || primaryPort > 65535) {
                throw new IllegalArgumentException("replicaOf: port " + primaryPort);
            }
            replicaOf = primaryPort;
            return this;
        }

        /**
         * Runs a Redis Sentinel instead ({@code redis-server sentinel.conf --sentinel}), its configuration file
         * made of {@code config} (e.g. {@code sentinel monitor name 127.0.0.1 6379 2}) and kept across restarts,
         * as the Sentinel rewrites it. Not with {@link #appendOnly()}, {@link #cluster()} or
         * {@link #replicaOf(int)}.
         *
         * @param config the configuration lines; port, address and directory are the server's own
         * @return this builder
         */
        public Builder sentinel(List<String> config) {
            sentinel = List.copyOf(config);
            return this;
        }

        /**
         * Adds command-line arguments, after the standard ones: a later argument overrides an earlier one, so
         * {@code args("--appendfsync", "everysec")} after {@link #appendOnly()} relaxes it.
         *
         * @param more the arguments, e.g. {@code "--cluster-node-timeout", "5000"}
         * @return this builder
         */
        public Builder args(String... more) {
            args.addAll(Arrays.asList(more));
            return this;
        }

        /**
         * Runs the server under another program, e.g. {@code valgrind --tool=callgrind}: the command line is
         * {@code command}, then the binary and its arguments. The working directory is the server's directory.
         *
         * @param command the program and its arguments
         * @return this builder
         */
        public Builder wrapper(String... command) {
            wrapper = List.of(command);
            return this;
        }

        /**
         * Uses {@code directory} (created if need be) for the server's files: its append-only file, log, and
         * cluster or Sentinel configuration. It is kept at {@link RedisServer#close()}; by default the server
         * gets a new temporary directory, deleted then. One server per directory.
         *
         * @param directory the directory
         * @return this builder
         */
        public Builder directory(Path directory) {
            this.directory = directory;
            return this;
        }

        /**
         * Bounds a start, a restart and a stop's wait (10 s by default; more under a slow wrapper).
         *
         * @param timeout a positive duration
         * @return this builder
         */
        public Builder startTimeout(Duration timeout) {
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalArgumentException("startTimeout: " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /**
         * Starts the server and waits until it answers.
         *
         * @return the running server
         * @throws IOException if it could not be started (with the end of its log), or no free port was found
         * @throws InterruptedException if interrupted meanwhile (the process is then killed)
         */
        public RedisServer start() throws IOException, InterruptedException {
            if (sentinel != null && (appendOnly || cluster || replicaOf > 0)) {
                throw new IllegalStateException("a Sentinel has no append-only file, cluster mode or primary");
            }
            return RedisServer.start(binary, new Options(wrapper, appendOnly, cluster, replicaOf, sentinel,
                    List.copyOf(args), directory, timeout));
        }
    }

    private RedisServer(Binary binary, Options options, Path dir, boolean ownsDir, int port) {
        this.binary = binary;
        this.options = options;
        this.dir = dir;
        this.ownsDir = ownsDir;
        this.port = port;
        this.log = dir.resolve("redis-" + port + ".log");
    }

    /**
     * A builder for a server running {@code binary}.
     *
     * @param binary the binary, from {@link Source#find()}
     * @return a builder with the defaults: no persistence, 10 s start timeout, a temporary directory
     */
    public static Builder builder(Binary binary) {
        return new Builder(binary);
    }

    /**
     * Starts {@code binary} with the defaults: {@code builder(binary).start()}.
     *
     * @param binary the binary, from {@link Source#find()}
     * @return the running server
     * @throws IOException if it could not be started (with the end of its log)
     * @throws InterruptedException if interrupted meanwhile
     */
    public static RedisServer start(Binary binary) throws IOException, InterruptedException {
        return builder(binary).start();
    }

    /**
     * The Redis a tool was told to use instead of starting its own: {@code -Dsema.redis.uri}, else
     * {@code $SEMA_REDIS_URI}.
     *
     * @return the URI as given, e.g. {@code redis://host:6379}, or empty
     */
    public static Optional<String> givenUri() {
        String uri = System.getProperty("sema.redis.uri");
        if (uri == null || uri.isBlank()) {
            uri = System.getenv("SEMA_REDIS_URI");
        }
        return uri == null || uri.isBlank() ? Optional.empty() : Optional.of(uri.trim());
    }

    // ---------------------------------------------------------------- the binaries

    private static boolean bundledForced() {
        return "bundled".equals(System.getenv(ENV_SERVER));
    }

    private static Optional<Binary> installed() throws IOException {
        if (bundledForced()) {
            return Optional.empty();
        }
        List<Path> candidates = new ArrayList<>();
        String env = System.getenv(ENV_SERVER);
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
        Optional<Path> found = candidates.stream().filter(Files::isRegularFile).filter(Files::isExecutable).findFirst();
        return found.isEmpty() ? Optional.empty() : Optional.of(new Binary(found.get(), version(found.get()), false));
    }

    /** The class-path resource of embedded-redis holding the Redis 6.2 binary for this platform. */
    private static Optional<String> bundledResource() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean arm64 = arch.equals("aarch64") || arch.equals("arm64");
        boolean x86 = arch.equals("x86") || arch.matches("i[3-6]86");
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
        return Optional.empty(); // Windows: only a Redis 5.0 port is bundled, older than Sema supports
    }

    private static String missingBundled() {
        String platform = System.getProperty("os.name") + ", " + System.getProperty("os.arch");
        Optional<String> resource = bundledResource();
        if (resource.isPresent() && RedisServer.class.getClassLoader().getResource(resource.get()) == null) {
            return "the embedded-redis jar (its Redis 6.2 for " + platform + ") is not on the class path";
        }
        return "embedded-redis bundles no Redis 6.2 binary for this platform (" + platform + ")";
    }

    /** The bundled binary, extracted once per JVM to an executable temporary file. */
    private static Optional<Binary> bundled() throws IOException {
        BUNDLED_LOCK.lock();
        try {
            if (bundled == null) {
                Optional<Binary> found = Optional.empty();
                Optional<String> resource = bundledResource();
                if (resource.isPresent()) {
                    try (InputStream in = RedisServer.class.getClassLoader().getResourceAsStream(resource.get())) {
                        if (in != null) {
                            Path file = Files.createTempFile("sema-" + resource.get() + "-", "");
                            file.toFile().deleteOnExit();
                            Files.copy(in, file, StandardCopyOption.REPLACE_EXISTING);
                            Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rwx------"));
                            found = Optional.of(new Binary(file, version(file), true));
                        }
                    }
                }
                bundled = found;
            }
            return bundled;
        } finally {
            BUNDLED_LOCK.unlock();
        }
    }

    /** What {@code redis-server --version} reports, e.g. {@code 7.0.15}; "?" if it does not say. */
    private static String version(Path binary) throws IOException {
        String known = VERSIONS.get(binary);
        if (known != null) {
            return known;
        }
        // Not in computeIfAbsent: no lock is held while the process runs.
        Process p = new ProcessBuilder(binary.toString(), "--version").redirectErrorStream(true).start();
        String version = "?";
        try {
            if (p.waitFor(10, TimeUnit.SECONDS)) {
                String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                int v = out.indexOf("v=");
                version = v < 0 ? "?" : out.substring(v + 2).split("\\s")[0];
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the version is only reported: "?" will do
        } finally {
            p.destroyForcibly();
        }
        VERSIONS.putIfAbsent(binary, version);
        return version;
    }

    // ---------------------------------------------------------------- starting

    /** How one attempt to start a process ended, unless it threw. */
    private enum Launch { STARTED, PORT_TAKEN }

    private static RedisServer start(Binary binary, Options options) throws IOException, InterruptedException {
        boolean owned = options.directory() == null;
        Path dir = owned ? Files.createTempDirectory("sema-redis-")
                : Files.createDirectories(options.directory());
        String taken = "";
        try {
            for (int attempt = 0; attempt < PORT_ATTEMPTS; attempt++) {
                RedisServer server = new RedisServer(binary, options, dir, owned, freePort(options.cluster()));
                LIVE.add(server); // keeps I2
                Launch outcome = null;
                server.lock.lock();
                try {
                    outcome = server.launch();
                } finally {
                    server.lock.unlock();
                    if (outcome != Launch.STARTED) {
                        LIVE.remove(server); // no process of it runs (I1)
                    }
                }
                if (outcome == Launch.STARTED) {
                    return server;
                }
                taken += (taken.isEmpty() ? "" : ", ") + server.port;
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            if (owned) {
                deleteTree(dir);
            }
            throw e;
        }
        if (owned) {
            deleteTree(dir);
        }
        throw new IOException(binary + " found each port it tried taken by another process first: " + taken);
    }

    /**
     * A random free loopback port below the ephemeral range (with its bus port for a cluster node): a port
     * there is never handed to an outgoing connection, which could take it while the server restarts.
     */
    private static int freePort(boolean withBusPort) throws IOException {
        int low = 10_000;
        int high = ephemeralLow() - 1 - (withBusPort ? 10_000 : 0);
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int i = 0; high - low >= 1_000 && i < 100; i++) {
            int port = random.nextInt(low, high + 1);
            if (free(port) && (!withBusPort || free(port + 10_000))) {
                return port;
            }
        }
        for (;;) { // the ephemeral range leaves no room below it: take one the kernel gives
            try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
                int port = s.getLocalPort();
                if (!withBusPort || (port + 10_000 <= 65_535 && free(port + 10_000))) {
                    return port;
                }
            }
        }
    }

    private static int ephemeralLow() {
        // Files.readString reads only the first byte of this file (its size is reported as 0): read a line.
        try (BufferedReader r = Files.newBufferedReader(Path.of("/proc/sys/net/ipv4/ip_local_port_range"))) {
            return Integer.parseInt(r.readLine().trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException notLinux) {
            return 32_768; // Linux's default; macOS starts at 49152
        }
    }

    private static boolean free(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true); // as redis-server binds
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    private List<String> command() throws IOException {
        List<String> c = new ArrayList<>(options.wrapper());
        c.add(binary.path().toString());
        if (options.sentinel() != null) {
            Path conf = dir.resolve("sentinel-" + port + ".conf");
            if (!Files.exists(conf)) { // a restart keeps what the Sentinel wrote there
                Files.writeString(conf, String.join("\n", options.sentinel()) + "\n");
            }
            c.add(conf.toString());
            c.add("--sentinel");
        }
        c.addAll(List.of("--bind", HOST, "--port", Integer.toString(port), "--dir", dir.toString(),
                "--daemonize", "no", "--protected-mode", "yes", "--logfile", "", "--save", ""));
        c.addAll(options.appendOnly() ? List.of("--appendonly", "yes", "--appendfsync", "always")
                : List.of("--appendonly", "no"));
        if (options.cluster()) {
            c.addAll(List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + port + ".conf"));
        }
        if (options.replicaOf() > 0) {
            c.addAll(List.of("--replicaof", HOST, Integer.toString(options.replicaOf())));
        }
        c.addAll(options.args());
        return c;
    }

    /** Starts a process on this server's port and waits until it answers: keeps I1 (call under lock). */
    private Launch launch() throws IOException, InterruptedException {
        long logStart = Files.exists(log) ? Files.size(log) : 0;
        ProcessBuilder pb = new ProcessBuilder(command()).directory(dir.toFile()).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        Process p = pb.start();
        process = p;
        long deadline = System.nanoTime() + options.timeout().toNanos();
        try {
            for (;;) {
                if (!p.isAlive()) {
                    process = null;
                    String output = logSince(logStart);
                    if (output.contains(PORT_TAKEN)) {
                        return Launch.PORT_TAKEN;
                    }
                    throw new IOException(this + " exited with status " + p.exitValue() + " as it started; "
                            + tail(output));
                }
                long answered = answeringPid();
                if (answered == p.pid() || (answered > 0 && p.descendants().anyMatch(h -> h.pid() == answered))) {
                    pid = answered;
                    return Launch.STARTED;
                }
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException(this + " did not answer within " + options.timeout().toSeconds()
                            + " s of its start; " + tail(logSince(logStart)));
                }
                p.waitFor(20, TimeUnit.MILLISECONDS);
            }
        } catch (IOException | InterruptedException | RuntimeException | Error e) {
            if (process != null) {
                destroyTree(p);
                process = null;
            }
            throw e;
        }
    }

    /**
     * The pid of the server that answers on this port, once it serves commands, or -1 while nothing answers or
     * it is still loading its data: {@code INFO server} gives its pid, which tells our process from one that
     * another process may have started on the port, and {@code PING} answers {@code -LOADING} until the data is
     * loaded (INFO is served meanwhile). Both on one connection: one server's answers.
     */
    private long answeringPid() {
        try {
            List<String> replies = exchange(1_000, new String[] {"INFO", "server"}, new String[] {"PING"});
            String info = replies.get(0);
            int at = info == null ? -1 : info.indexOf("process_id:");
            if (at < 0 || !"+PONG".equals(replies.get(1))) {
                return -1;
            }
            int end = info.indexOf('\r', at);
            return Long.parseLong(info.substring(at + "process_id:".length(), end < 0 ? info.length() : end).trim());
        } catch (IOException | RuntimeException notYet) {
            return -1;
        }
    }

    /**
     * Sends one command and reads its reply: a status or error line as is, a bulk string's content (null for a
     * missing value). Enough for {@code INFO}, {@code PING}, {@code SET}, {@code GET}, {@code INCR}; not for
     * arrays.
     */
    String call(int timeoutMillis, String... command) throws IOException {
        return exchange(timeoutMillis, command).get(0);
    }

    /** Sends the commands on one new connection and reads their replies, as {@link #call} does. */
    private List<String> exchange(int timeoutMillis, String[]... commands) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), timeoutMillis);
            s.setSoTimeout(timeoutMillis);
            StringBuilder b = new StringBuilder();
            for (String[] command : commands) {
                b.append('*').append(command.length).append("\r\n");
                for (String a : command) {
                    b.append('$').append(a.getBytes(StandardCharsets.UTF_8).length).append("\r\n").append(a)
                            .append("\r\n");
                }
            }
            OutputStream out = s.getOutputStream();
            out.write(b.toString().getBytes(StandardCharsets.UTF_8));
            out.flush();
            InputStream in = s.getInputStream();
            List<String> replies = new ArrayList<>();
            for (int i = 0; i < commands.length; i++) {
                replies.add(reply(in));
            }
            return replies;
        }
    }

    private static String reply(InputStream in) throws IOException {
        String first = line(in);
        if (!first.startsWith("$")) {
            return first;
        }
        int length = Integer.parseInt(first.substring(1));
        if (length < 0) {
            return null;
        }
        byte[] body = in.readNBytes(length + 2);
        if (body.length != length + 2) {
            throw new IOException("connection closed in a reply");
        }
        return new String(body, 0, length, StandardCharsets.UTF_8);
    }

    private static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (int c; (c = in.read()) != '\n'; ) {
            if (c < 0) {
                throw new IOException("connection closed before a reply");
            }
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }

    private String logSince(long offset) {
        try (RandomAccessFile f = new RandomAccessFile(log.toFile(), "r")) {
            long length = f.length();
            byte[] bytes = new byte[(int) Math.max(0, Math.min(length - offset, 1 << 20))];
            f.seek(length - bytes.length);
            f.readFully(bytes);
            return new String(bytes, StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "(no log " + log + ": " + e.getMessage() + ")";
        }
    }

    private String tail(String output) {
        List<String> lines = output.lines().toList();
        return lines.isEmpty() ? "its log " + log + " is empty"
                : "its log " + log + " ends:\n" + String.join("\n",
                        lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size()));
    }

    // ---------------------------------------------------------------- the running server

    /**
     * The binary this server runs.
     *
     * @return the binary
     */
    public Binary binary() {
        return binary;
    }

    /**
     * The loopback address the server listens on.
     *
     * @return {@code 127.0.0.1}
     */
    public String host() {
        return HOST;
    }

    /**
     * The server's port, the same across restarts.
     *
     * @return the port
     */
    public int port() {
        return port;
    }

    /**
     * The server's URI, without options; append e.g. {@code ?timeout=5s} for Lettuce.
     *
     * @return {@code redis://127.0.0.1:port}
     */
    public String uri() {
        return "redis://" + HOST + ":" + port;
    }

    /**
     * The server's directory: its append-only file, log, and cluster or Sentinel configuration.
     *
     * @return the directory
     */
    public Path directory() {
        return dir;
    }

    /**
     * The server's log, to which every process of this server appends (standard output and error).
     *
     * @return the log file
     */
    public Path log() {
        return log;
    }

    /**
     * The pid of the running {@code redis-server}, as it reports it.
     *
     * @return the pid
     * @throws IllegalStateException if the server is not running
     */
    public long pid() {
        long p = pid;
        if (!isRunning()) {
            throw new IllegalStateException(this + " is not running");
        }
        return p;
    }

    /**
     * Whether a process of this server runs (paused or not).
     *
     * @return true if started and neither stopped, killed nor exited since
     */
    public boolean isRunning() {
        Process p = process;
        return p != null && p.isAlive();
    }

    /**
     * Stops the server without ending it (SIGSTOP): it accepts connections but answers nothing until
     * {@link #resume()}.
     *
     * @throws IOException if the signal could not be sent, or the server is not running
     * @throws InterruptedException if interrupted meanwhile
     */
    public void pause() throws IOException, InterruptedException {
        lock.lock();
        try {
            if (process == null) {
                throw new IOException(this + " is not running");
            }
            signal("STOP");
            paused = true;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Lets a paused server run again (SIGCONT): it then runs the commands that queued meanwhile. Does nothing
     * when the server is not running; harmless when it is not paused.
     *
     * @throws IOException if the signal could not be sent
     * @throws InterruptedException if interrupted meanwhile
     */
    public void resume() throws IOException, InterruptedException {
        lock.lock();
        try {
            if (process != null) {
                signal("CONT");
            }
            paused = false;
        } finally {
            lock.unlock();
        }
    }

    private void signal(String which) throws IOException, InterruptedException {
        Process kill = new ProcessBuilder("kill", "-" + which, Long.toString(pid)).redirectErrorStream(true).start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            kill.destroyForcibly();
            throw new IOException("kill -" + which + " " + pid + " failed: "
                    + new String(kill.getInputStream().readNBytes(1_000), StandardCharsets.UTF_8).trim());
        }
    }

    /**
     * Stops the server in order: {@code SHUTDOWN NOSAVE} (the append-only file is written out), then SIGTERM
     * and SIGKILL should it not exit in time. A paused server is killed. Does nothing when it is not running;
     * {@link #restart()} starts it again.
     *
     * @throws IOException if the process outlives SIGKILL
     * @throws InterruptedException if interrupted meanwhile
     */
    public void stop() throws IOException, InterruptedException {
        lock.lock();
        try {
            Process p = process;
            if (p == null) {
                return;
            }
            if (paused) {
                killLocked();
                return;
            }
            boolean asked;
            try {
                String reply = call(1_000, "SHUTDOWN", "NOSAVE");
                asked = reply == null || !reply.startsWith("-"); // an error: refused
            } catch (SocketTimeoutException | ConnectException unanswered) {
                asked = false;
            } catch (IOException closed) {
                asked = true; // a server that shuts down closes the connection without a reply
            }
            if (!asked || !p.waitFor(options.timeout().toMillis(), TimeUnit.MILLISECONDS)) {
                p.destroy();
                if (!p.waitFor(5, TimeUnit.SECONDS)) {
                    killLocked();
                    return;
                }
            }
            process = null;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Kills the server (SIGKILL), as a crash would: it writes nothing more. Does nothing when it is not running;
     * {@link #restart()} starts it again.
     *
     * @throws IOException if the process outlives SIGKILL by 10 s
     * @throws InterruptedException if interrupted meanwhile
     */
    public void kill() throws IOException, InterruptedException {
        lock.lock();
        try {
            killLocked();
        } finally {
            lock.unlock();
        }
    }

    private void killLocked() throws IOException, InterruptedException {
        Process p = process;
        if (p == null) {
            return;
        }
        if (!destroyTree(p)) {
            throw new IOException(this + " outlived SIGKILL by 10 s");
        }
        process = null;
        paused = false; // keeps I3
    }

    /** SIGKILL to the process and its descendants; true once they have exited (within 10 s). */
    private static boolean destroyTree(Process p) throws InterruptedException {
        List<ProcessHandle> descendants = p.descendants().toList();
        p.destroyForcibly();
        descendants.forEach(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        if (!p.waitFor(10, TimeUnit.SECONDS)) {
            return false;
        }
        for (ProcessHandle d : descendants) {
            while (d.isAlive()) {
                if (System.nanoTime() - deadline > 0) {
                    return false;
                }
                Thread.sleep(10);
            }
        }
        return true;
    }

    /**
     * Kills the server if it runs (SIGKILL, as a crash would) and starts it again on the same port, in the same
     * directory: with {@link Builder#appendOnly()} it loads its append-only file and answers only once it has,
     * with every write it had acknowledged; without, it starts empty. Should the port be taken meanwhile, it is
     * tried again until the start timeout.
     *
     * @throws IOException if it could not be started again (with the end of its log)
     * @throws IllegalStateException if the server was closed
     * @throws InterruptedException if interrupted meanwhile
     */
    public void restart() throws IOException, InterruptedException {
        lock.lock();
        try {
            if (closed) {
                throw new IllegalStateException(this + " is closed");
            }
            killLocked();
            long deadline = System.nanoTime() + options.timeout().toNanos();
            while (launch() == Launch.PORT_TAKEN) {
                if (System.nanoTime() - deadline > 0) {
                    throw new IOException(this + " cannot start again: another process holds port " + port
                            + " since " + options.timeout().toSeconds() + " s; " + tail(logSince(0)));
                }
                Thread.sleep(50);
            }
        } finally {
            lock.unlock();
        }
    }

    /**
     * Stops the server ({@link #stop()}) and deletes the directory it made; a directory given to
     * {@link Builder#directory(Path)} stays. Idempotent.
     *
     * @throws IOException if the process outlives SIGKILL
     * @throws InterruptedException if interrupted meanwhile
     */
    @Override
    public void close() throws IOException, InterruptedException {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            stop();
            closed = true;
            LIVE.remove(this);
            if (ownsDir) {
                deleteTree(dir);
            }
        } finally {
            lock.unlock();
        }
    }

    /** Describes the server: {@code redis-server 7.0.15 (/usr/bin/redis-server) on 127.0.0.1:port}. */
    @Override
    public String toString() {
        return binary + (options.sentinel() != null ? " (Sentinel)" : "") + " on " + HOST + ":" + port;
    }

    /** The shutdown hook: kills what was not closed, and deletes the directories made for it. */
    private static void killAll() {
        List<Process> dying = new ArrayList<>();
        for (RedisServer s : LIVE) {
            Process p = s.process;
            if (p != null) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                dying.add(p);
            }
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        try {
            for (Process p : dying) {
                p.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException exiting) {
            Thread.currentThread().interrupt();
        }
        for (RedisServer s : LIVE) {
            if (s.ownsDir) {
                deleteTree(s.dir);
            }
        }
    }

    private static void deleteTree(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            for (Path f : (Iterable<Path>) files.sorted(Comparator.reverseOrder())::iterator) {
                Files.deleteIfExists(f);
            }
        } catch (IOException | UncheckedIOException ignored) {
            // a temporary directory left behind is harmless
        }
    }
}
