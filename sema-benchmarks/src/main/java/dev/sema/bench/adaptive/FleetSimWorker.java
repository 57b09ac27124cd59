package dev.sema.bench.adaptive;

import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.redis.RedisSemaphores;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.stream.Collectors;

/**
 * One process of {@link AdaptiveFleetSimulation}: requests arrive open-loop at its share of the rate,
 * each is admitted (or refused at once) by its semaphore, calls the shared downstream over HTTP with a
 * client timeout, and reports a timeout or a 503 as a drop. In mode {@code shared} the semaphore is one
 * {@code RedisSemaphore} for the whole fleet; in mode {@code separate} it is this process's own local
 * semaphore. Either way an {@code AdaptiveLimit.gradient()} adjusts it.
 *
 * <p>Arguments: mode, Redis URI, semaphore name, downstream URL, arrivals per second, start (epoch ms),
 * run length (ms), client timeout (ms), seed, latency file. Prints {@code LIMIT <ms since start> <limit>}
 * every 100 ms and {@code STATS <admitted> <succeeded> <failed> <refused>} at the end.
 */
public final class FleetSimWorker {
    private FleetSimWorker() {
    }

    public static void main(String[] args) throws Exception {
        String mode = args[0];
        String redisUri = args[1];
        String name = args[2];
        URI downstream = URI.create(args[3]);
        int rate = Integer.parseInt(args[4]);
        long startEpochMs = Long.parseLong(args[5]);
        long runMs = Long.parseLong(args[6]);
        Duration clientTimeout = Duration.ofMillis(Long.parseLong(args[7]));
        Random random = new Random(Long.parseLong(args[8]));
        Path latencyFile = Path.of(args[9]);

        RedisSemaphores redis = mode.equals("shared") ? RedisSemaphores.connect(redisUri) : null;
        Semaphore semaphore = redis != null
                ? redis.semaphore(name).permits(20).maxPermits(1_000).build()
                : Semaphore.builder().name(name).permits(5).maxPermits(1_000).build();
        AdaptiveLimit adaptive = AdaptiveLimit.gradient().build(semaphore);
        HttpClient http = HttpClient.newBuilder().executor(Executors.newVirtualThreadPerTaskExecutor())
                .version(HttpClient.Version.HTTP_1_1).build();
        HttpRequest request = HttpRequest.newBuilder(downstream).timeout(clientTimeout).GET().build();

        AtomicLong admitted = new AtomicLong();
        AtomicLong succeeded = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong refused = new AtomicLong();
        AtomicLong running = new AtomicLong();
        ConcurrentLinkedQueue<Long> latenciesMicros = new ConcurrentLinkedQueue<>();

        long waitMs = startEpochMs - System.currentTimeMillis();
        if (waitMs > 0) {
            Thread.sleep(waitMs);
        }
        long start = System.nanoTime();
        long end = start + TimeUnit.MILLISECONDS.toNanos(runMs);
        double meanGap = 1e9 / rate;
        long next = start;
        long nextReport = start;
        for (long now = System.nanoTime(); now < end; now = System.nanoTime()) {
            if (now >= nextReport) {
                System.out.println("LIMIT " + (now - start) / 1_000_000 + " " + adaptive.limit());
                nextReport += TimeUnit.MILLISECONDS.toNanos(100);
            }
            if (now < next) {
                LockSupport.parkNanos(Math.min(next, nextReport) - now);
                continue;
            }
            next += (long) (-Math.log(1 - random.nextDouble()) * meanGap);
            running.incrementAndGet();
            Thread.startVirtualThread(() -> {
                try {
                    Optional<Permit> permit = semaphore.tryAcquire(); // a round trip on Redis: off the arrival thread
                    if (permit.isEmpty()) {
                        refused.incrementAndGet();
                        return;
                    }
                    admitted.incrementAndGet();
                    long t0 = System.nanoTime();
                    boolean ok;
                    try (Permit p = permit.get()) {
                        ok = call(http, request);
                        if (!ok) {
                            adaptive.dropped();
                        }
                    }
                    latenciesMicros.add((System.nanoTime() - t0) / 1_000);
                    (ok ? succeeded : failed).incrementAndGet();
                } catch (RuntimeException e) {
                    failed.incrementAndGet(); // Redis trouble: counted, not fatal to the run
                } finally {
                    running.decrementAndGet();
                }
            });
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (running.get() > 0 && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        adaptive.close();
        Files.writeString(latencyFile, latenciesMicros.stream().map(String::valueOf).collect(Collectors.joining("\n")));
        System.out.println("STATS " + admitted + " " + succeeded + " " + failed + " " + refused);
        System.out.flush();
        if (redis != null) {
            redis.close();
        }
        System.exit(0);
    }

    private static boolean call(HttpClient http, HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.discarding()).statusCode() == 200;
        } catch (IOException e) {
            return false; // the client timeout (HttpTimeoutException) or a refused connection
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
