package dev.sema.bench.redis;

import java.io.IOException;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The two Redis semaphores of {@link RedisComparison} ({@link Impl}) and its observer's tools ({@link RawRedis},
 * {@link CommandWindow}, {@link Monitor}), for the benchmarks of other packages ({@code dev.sema.bench.fleet}):
 * the same clients, configured the same way, with the same lease ({@link #lease()}), driven through the same
 * calls, and Redis's statistics read the same way.
 *
 * <p>An implementation is named by its {@link Impl} constant's name: {@code SEMA}, {@code REDISSON}.
 */
public final class Contenders {
    private Contenders() {
    }

    /** The implementations' names, in the order the comparison runs them: {@code SEMA}, {@code REDISSON}. */
    public static List<String> names() {
        return Arrays.stream(Impl.values()).map(Enum::name).toList();
    }

    /** The implementation's label in reports ("Sema RedisSemaphore", "Redisson RPermitExpirableSemaphore"). */
    public static String label(String impl) {
        return Impl.valueOf(impl).label;
    }

    /** The prefix of the names ({@code CLIENT SETNAME}) of the implementation's client connections. */
    public static String clientPrefix(String impl) {
        return Impl.valueOf(impl).prefix;
    }

    /** The lease of every grant, for both implementations. */
    public static Duration lease() {
        return Impl.LEASE;
    }

    /** The Redisson settings that matter, as its default configuration has them. */
    public static Map<String, Object> redissonSettings(Endpoint redis) {
        return Impl.redissonSettings(redis);
    }

    /**
     * Connects one client of {@code impl} (what one process would have) to the Redis at {@code redisUri}
     * ({@code redis://host:port}), its connections named {@code clientPrefix(impl) + role}.
     */
    public static Client connect(String impl, String redisUri, String role) {
        Impl.Client c = Impl.valueOf(impl).connect(Endpoint.given(redisUri), role);
        return new Client() {
            @Override
            public Handle semaphore(String name, int permits) {
                Impl.Handle h = c.semaphore(name, permits);
                return new Handle() {
                    @Override
                    public Object acquire() throws InterruptedException {
                        return h.acquire();
                    }

                    @Override
                    public void release(Object grant) {
                        h.release(grant);
                    }
                };
            }

            @Override
            public void close() {
                c.close();
            }
        };
    }

    /** One process's client of one implementation. */
    public interface Client extends AutoCloseable {
        /** A handle on semaphore {@code name}, created with {@code permits} if it does not exist. */
        Handle semaphore(String name, int permits);

        @Override
        void close();
    }

    /** One semaphore through one client. */
    public interface Handle {
        /** Acquires one permit, blocking without a timeout, with the lease {@link #lease()}; returns the grant. */
        Object acquire() throws InterruptedException;

        /** Releases a grant {@link #acquire()} returned. */
        void release(Object grant);
    }

    /**
     * A plain connection to a Redis for statistics and probes ({@link RawRedis}: it depends on neither client
     * under test, and its own commands are taken out of the counts), named {@code bench-observer}. Not
     * thread-safe.
     */
    public static final class Observer implements AutoCloseable {
        private final Endpoint redis;
        private final RawRedis raw;
        private final Map<String, String> scriptNames = new HashMap<>(RedisComparison.semaScripts());

        private Observer(Endpoint redis, RawRedis raw) {
            this.redis = redis;
            this.raw = raw;
        }

        /** Connects to {@code redis}. */
        public static Observer connect(Endpoint redis) throws IOException {
            RawRedis r = RawRedis.connect(redis.host(), redis.port());
            try {
                r.call("CLIENT", "SETNAME", "bench-observer");
            } catch (IOException e) {
                r.close();
                throw e;
            }
            return new Observer(redis, r);
        }

        /** Sends one command and returns its reply (see {@link RawRedis#call}). */
        public Object call(String... args) throws IOException {
            return raw.call(args);
        }

        /** {@code INFO section} as {@code field -> value}. */
        public Map<String, String> info(String section) throws IOException {
            Map<String, String> m = new LinkedHashMap<>();
            for (String line : ((String) raw.call("INFO", section)).split("\r?\n")) {
                int colon = line.indexOf(':');
                if (colon > 0 && !line.startsWith("#")) {
                    m.put(line.substring(0, colon), line.substring(colon + 1));
                }
            }
            return m;
        }

        /**
         * Starts counting what Redis executes ({@code CONFIG RESETSTAT}, then {@code INFO commandstats} at
         * the end, the observer's own commands taken out), and with {@code monitor} also what each client
         * connection sent, from {@code MONITOR}: a heavy load on Redis, for counting only, never in a timed
         * window.
         */
        public Window open(boolean monitor) throws IOException, InterruptedException {
            return new Window(CommandWindow.open(raw, redis, monitor), this);
        }

        /**
         * Names the scripts {@code impl}'s client runs for an acquire and a release (EVALSHA by SHA-1), as
         * {@code ACQUIRE} and {@code RELEASE}, unless they have names already (Sema's have theirs from
         * sema-redis's script files): one acquire and one release on a semaphore of its own, each under
         * MONITOR, through a client whose connections are named {@code clientPrefix(impl) + "learn"}.
         */
        public void learnScripts(String impl) throws IOException, InterruptedException {
            String prefix = clientPrefix(impl) + "learn";
            try (Client c = Contenders.connect(impl, redis.uri(), "learn")) {
                Handle h = c.semaphore("bench-learn-" + Long.toString(System.nanoTime(), 36), 1);
                h.release(h.acquire()); // loads the scripts
                Window w = open(true);
                Object grant = h.acquire();
                learn(w.close().scriptShas(prefix), "ACQUIRE");
                w = open(true);
                h.release(grant);
                learn(w.close().scriptShas(prefix), "RELEASE");
            }
        }

        private void learn(Map<String, Long> bySha, String name) {
            bySha.entrySet().stream().max(Map.Entry.comparingByValue())
                    .ifPresent(e -> scriptNames.putIfAbsent(e.getKey(), name));
        }

        String scriptName(String sha) {
            return scriptNames.getOrDefault(sha, "script " + sha.substring(0, Math.min(8, sha.length())));
        }

        @Override
        public void close() throws IOException {
            raw.close();
        }
    }

    /** A counting window opened by {@link Observer#open(boolean)}. */
    public static final class Window {
        private final CommandWindow window;
        private final Observer observer;

        private Window(CommandWindow window, Observer observer) {
            this.window = window;
            this.observer = observer;
        }

        /** Ends the window and returns what it counted. */
        public Counted close() throws IOException, InterruptedException {
            return new Counted(window.close(), observer);
        }
    }

    /** What a {@link Window} counted. */
    public static final class Counted {
        private final CommandWindow.Counts counts;
        private final Observer observer;

        private Counted(CommandWindow.Counts counts, Observer observer) {
            this.counts = counts;
            this.observer = observer;
        }

        /**
         * Every command Redis executed, by {@code commandstats} name, the commands run inside scripts
         * included, the observer's own excluded.
         */
        public Map<String, Long> executed() {
            return counts.executed();
        }

        /** The microseconds Redis spent per command ({@code commandstats usec}; a script's includes its commands). */
        public Map<String, Long> executedMicros() {
            return counts.executedMicros();
        }

        /** The commands sent by the connections whose name starts with {@code clientPrefix} (MONITOR windows). */
        public Map<String, Long> issued(String clientPrefix) {
            return CommandWindow.Counts.sumFor(counts.issuedByClient(), clientPrefix);
        }

        /** The commands run by those connections' scripts (MONITOR windows). */
        public Map<String, Long> inScripts(String clientPrefix) {
            return CommandWindow.Counts.sumFor(counts.inScriptsByClient(), clientPrefix);
        }

        /**
         * Those connections' EVALSHAs by script name (Sema's from its script files, others as learned by
         * {@link Observer#learnScripts}, else {@code script} and the SHA-1's first digits); MONITOR windows.
         */
        public Map<String, Long> scripts(String clientPrefix) {
            Map<String, Long> out = new TreeMap<>();
            scriptShas(clientPrefix).forEach((sha, n) -> out.merge(observer.scriptName(sha), n, Long::sum));
            return out;
        }

        Map<String, Long> scriptShas(String clientPrefix) {
            return CommandWindow.Counts.sumFor(counts.scriptsByClient(), clientPrefix);
        }
    }
}
