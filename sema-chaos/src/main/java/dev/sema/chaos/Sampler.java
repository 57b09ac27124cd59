package dev.sema.chaos;

import dev.sema.testing.RedisServer;
import dev.sema.testing.history.Recorder;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Reads each semaphore's counts in Redis every 100 ms, straight from its meta value, and records them as
 * {@code sample} events; at the end, waits until every permit is back and nobody waits, and records the
 * {@code final} counts. A passive observer: it runs no script, so it neither ends expired leases nor serves
 * the queue (the workers' own scripts do), and it talks to Redis directly, not through a proxy.
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

    private final RedisServer redis;
    private final List<ChaosWorker.Sem> sems;
    private final Recorder rec;
    private volatile boolean closed;
    private Thread thread;
    private Socket socket;

    Sampler(RedisServer redis, List<ChaosWorker.Sem> sems, Recorder rec) {
        this.redis = redis;
        this.sems = sems;
        this.rec = rec;
    }

    void start() {
        thread = Thread.ofPlatform().daemon().name("chaos-sampler").start(() -> {
            while (!closed) {
                for (ChaosWorker.Sem s : sems) {
                    long[] c = read(s.name());
                    if (c != null) {
                        rec.sample(s.name(), c[0], c[1]);
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
            for (ChaosWorker.Sem s : sems) {
                long[] c = read(s.name());
                clean &= c != null && c[0] == 0 && c[1] == 0;
            }
            if (clean || System.nanoTime() - deadline > 0) {
                break;
            }
            Thread.sleep(100);
        }
        out.printf("chaos: final counts read %d ms after the workers left%n",
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started));
        for (ChaosWorker.Sem s : sems) {
            long[] c = read(s.name());
            rec.finalCounts(s.name(), c == null ? -1 : c[0], c == null ? -1 : c[1]);
        }
    }

    /** {used, qlen} of a semaphore, {0, 0} if it does not exist, or null if Redis did not answer. */
    synchronized long[] read(String name) {
        try {
            if (socket == null) {
                socket = new Socket(redis.host(), redis.port());
                socket.setSoTimeout(2_000);
            }
            byte[] key = ("sem:{" + name + "}:meta").getBytes(StandardCharsets.UTF_8);
            ByteArrayOutputStream cmd = new ByteArrayOutputStream();
            cmd.writeBytes(("*2\r\n$3\r\nGET\r\n$" + key.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            cmd.writeBytes(key);
            cmd.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
            OutputStream w = socket.getOutputStream();
            w.write(cmd.toByteArray());
            w.flush();
            DataInputStream r = new DataInputStream(socket.getInputStream());
            String head = line(r);
            if (head.equals("$-1")) {
                return new long[] {0, 0};
            }
            if (!head.startsWith("$")) {
                throw new IOException("GET answered " + head);
            }
            byte[] v = new byte[Integer.parseInt(head.substring(1))];
            r.readFully(v);
            line(r);
            ByteBuffer b = ByteBuffer.wrap(v).order(ByteOrder.LITTLE_ENDIAN);
            if (v.length >= QLEN + 8 && v[0] == 4) {
                return new long[] {(long) b.getDouble(USED), (long) b.getDouble(QLEN)};
            }
            if (v.length >= P_USED + 8 && v[0] == 5) {
                int n = (int) b.getDouble(P_N);
                if (n > 0 && v.length >= P_USED + 8 * n + 8) {
                    return new long[] {(long) b.getDouble(P_USED + 8 * n), (long) b.getDouble(P_QLEN)};
                }
            }
            throw new IOException("not a meta value of schema 4 or 5 (" + v.length + " bytes, version " + v[0] + ")");
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

    private static String line(DataInputStream r) throws IOException {
        StringBuilder b = new StringBuilder();
        for (;;) {
            int c = r.read();
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (c == '\r') {
                r.read();
                return b.toString();
            }
            b.append((char) c);
        }
    }

    @Override
    public void close() throws InterruptedException {
        closed = true;
        if (thread != null) {
            thread.join(2_000);
        }
    }
}
