package dev.sema.chaos;

import dev.sema.testing.history.Recorder;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * Reads each semaphore's counts in Redis every 100 ms, straight from its meta value, and records them as
 * {@code sample} events; at the end, waits until every permit is back and nobody waits, and records the
 * {@code final} counts. A passive observer: it runs no script, so it neither ends expired leases nor serves
 * the queue (the workers' own scripts do), and it talks to Redis directly, not through a proxy: to the node
 * that {@link Topology#locate} names for the semaphore at each read (after a failover, the new primary, as
 * the Sentinels name it; on a cluster, the slot's owner, following {@code -MOVED} and {@code -ASK} while a
 * slot moves), asked without the client under test.
 *
 * <p>It reads a keyed family's keys as the semaphores they are ({@code family:key}). A key idle for its
 * expiry is gone from Redis: nothing is held or queued then, and that is what it records. It counts the
 * times it saw a semaphore stored, then gone, then stored again ({@link #returns()}): the run's evidence that
 * keys really expired and were created afresh while the checker held them to their limit.
 *
 * <p>The meta value is sema-redis's schema 4 (the layout of schema 3, which the check of the version byte
 * tells apart): a version byte, then little-endian doubles: limit, ceiling, used, fence, seq, closed, idle,
 * due, qlen; or, for a partitioned semaphore, schema 5 (see sema-redis's partitions.lua): version 5, then
 * limit, ceiling, closed, idle, n (the number of partitions), gfor, seq, due, qlen, n queue lengths, fence,
 * used, ... . {@code used} (every partition's and the parent's own together) may still count a lease that
 * has expired and not yet been ended by a script.
 */
final class Sampler implements AutoCloseable {
    private static final int USED = 1 + 2 * 8;
    private static final int QLEN = 1 + 8 * 8;
    private static final int P_N = 1 + 4 * 8;
    private static final int P_QLEN = 1 + 8 * 8;
    private static final int P_USED = 1 + 10 * 8; // after the n queue lengths and the fence

    private final Topology topology;
    private final List<ChaosWorker.Sem> sems;
    private final Recorder rec;
    /**
     * Per semaphore once a read found it stored: whether the last answered read did. Guarded by this.
     */
    private final Map<String, Boolean> stored = new HashMap<>();
    /** Per semaphore: how many times it was found stored again after it was gone. Guarded by this. */
    private final Map<String, Integer> returns = new TreeMap<>();
    private volatile boolean closed;
    private Thread thread;
    private Socket socket;
    /** The port {@link #socket} is connected to. */
    private int socketPort = -1;

    Sampler(Topology topology, List<ChaosWorker.Sem> sems, Recorder rec) {
        this.topology = topology;
        this.sems = sems;
        this.rec = rec;
    }

    void start() {
        thread = Thread.ofPlatform().daemon().name("chaos-sampler").start(() -> {
            while (!closed) {
                for (String s : names()) {
                    Counts c = read(s);
                    if (c != null) {
                        rec.sample(s, c.used(), c.queued());
                    }
                }
                try {
                    Thread.sleep(100);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
    }

    /**
     * After the workers left: waits (up to {@code within}) until every semaphore shows nothing used and
     * nobody queued, then records the final counts, whatever they are.
     */
    void finalCounts(Duration within, PrintStream out) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        long started = System.nanoTime();
        for (;;) {
            boolean clean = true;
            for (String s : names()) {
                Counts c = read(s);
                clean &= c != null && c.used() == 0 && c.queued() == 0;
            }
            if (clean || System.nanoTime() - deadline > 0) {
                break;
            }
            Thread.sleep(100);
        }
        out.printf("chaos: final counts read %d ms after the workers left%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        for (String s : names()) {
            Counts c = read(s);
            rec.finalCounts(s, c == null ? -1 : c.used(), c == null ? -1 : c.queued());
        }
    }

    /** Waits (up to {@code within}) until Redis has each of {@code names}; says so if it does not by then. */
    void awaitStored(List<String> names, Duration within, PrintStream out) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        for (String name : names) {
            for (;;) {
                Counts c = read(name);
                if (c != null && c.stored()) {
                    break;
                }
                if (System.nanoTime() - deadline > 0) {
                    out.println("chaos: " + name + " not in Redis " + within.toSeconds() + " s after the start;"
                            + " faults begin all the same");
                    return;
                }
                Thread.sleep(50);
            }
        }
    }

    /** The semaphores the history names, each key of a keyed family among them. */
    private List<String> names() {
        return sems.stream().flatMap(s -> s.semaphores().stream()).toList();
    }

    /**
     * A semaphore's counts in Redis.
     *
     * @param used   permits held, as Redis counts them
     * @param queued requests queued
     * @param stored whether Redis has the semaphore (one gone after its idle expiry holds and queues nothing)
     */
    record Counts(long used, long queued, boolean stored) {
        static final Counts GONE = new Counts(0, 0, false);
    }

    /**
     * Returns, per semaphore, how many times a read found it stored after one had found it gone from Redis
     * following one that found it stored (a first creation is not counted); only semaphores that came back.
     */
    synchronized Map<String, Integer> returns() {
        return new TreeMap<>(returns);
    }

    /** A semaphore's counts, {@link Counts#GONE} if Redis does not have it, or null if Redis did not answer. */
    synchronized Counts read(String name) {
        Counts c = get(name);
        if (c != null && c.stored()) {
            if (Boolean.FALSE.equals(stored.put(name, true))) {
                returns.merge(name, 1, Integer::sum);
            }
        } else if (c != null) {
            stored.replace(name, false); // only one seen stored before: a semaphore not yet created is not gone
        }
        return c;
    }

    private Counts get(String name) {
        try {
            int port = topology.locate(name);
            if (port < 0) {
                return null; // no primary known at the moment (a failover under way): no sample
            }
            if (socket != null && socketPort != port) {
                socket.close();
                socket = null;
            }
            if (socket == null) {
                socket = new Socket("127.0.0.1", port);
                socket.setSoTimeout(2_000);
                socketPort = port;
            }
            Object reply = getMeta(socket, name, false);
            if (reply instanceof String redirect) {
                // -MOVED (the slot has a new owner) or -ASK (its keys are moving there): once more, there
                String[] parts = redirect.split(" ");
                String at = parts[parts.length - 1];
                int to = topology.target(Integer.parseInt(at.substring(at.lastIndexOf(':') + 1)));
                if (to < 0) {
                    throw new IOException("redirected to a node the topology does not know: " + redirect);
                }
                boolean ask = redirect.startsWith("-ASK");
                if (!ask) {
                    topology.moved();
                }
                try (Socket there = new Socket("127.0.0.1", to)) {
                    there.setSoTimeout(2_000);
                    reply = getMeta(there, name, ask);
                }
                if (reply instanceof String again) {
                    throw new IOException("redirected twice: " + redirect + ", then " + again);
                }
            }
            return (Counts) reply;
        } catch (IOException | RuntimeException e) {
            try {
                if (socket != null) {
                    socket.close();
                }
            } catch (IOException ignored) {
                // reconnects next time
            }
            socket = null;
            return null; // Redis restarting: no sample this time
        }
    }

    /**
     * GET of the semaphore's meta value on {@code s} (after ASKING, when {@code asking}): its counts, or the
     * redirection ({@code -MOVED ...} or {@code -ASK ...}) as a String.
     */
    private static Object getMeta(Socket s, String name, boolean asking) throws IOException {
        String key = "sem:{" + name + "}:meta";
        OutputStream w = s.getOutputStream();
        if (asking) {
            w.write(Resp.encode("ASKING"));
        }
        Resp.write(w, "GET", key);
        DataInputStream r = new DataInputStream(s.getInputStream());
        if (asking) {
            Object ok = Resp.read(r);
            if (!"OK".equals(ok)) {
                throw new IOException("ASKING answered " + ok);
            }
        }
        Object reply = Resp.read(r, true);
        if (reply == null) {
            return Counts.GONE;
        }
        if (reply instanceof Resp.Error e) {
            if (e.message().startsWith("MOVED ") || e.message().startsWith("ASK ")) {
                return "-" + e.message();
            }
            throw new IOException("GET answered -" + e.message());
        }
        if (!(reply instanceof byte[] v)) {
            throw new IOException("GET answered " + reply);
        }
        ByteBuffer b = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
        if (v.length >= QLEN + 8 && v[0] == 4) {
            return new Counts((long) b.getDouble(USED), (long) b.getDouble(QLEN), true);
        }
        if (v.length >= P_USED + 8 && v[0] == 5) {
            int n = (int) b.getDouble(P_N);
            if (n > 0 && v.length >= P_USED + 8 * n + 8) {
                return new Counts((long) b.getDouble(P_USED + 8 * n), (long) b.getDouble(P_QLEN), true);
            }
        }
        throw new IOException("not a meta value of schema 4 or 5 (" + v.length + " bytes, version " + v[0] + ")");
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        if (thread != null) {
            thread.join(2_000);
        }
    }
}
