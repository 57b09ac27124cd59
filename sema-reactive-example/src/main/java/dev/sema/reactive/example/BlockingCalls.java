package dev.sema.reactive.example;

import java.util.List;
import java.util.Queue;
import java.util.ServiceLoader;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import reactor.blockhound.BlockHound;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * The blocking calls BlockHound saw on non-blocking threads since the application started: counted and kept (the
 * first few), not thrown, so that one run reports every one of them instead of failing requests at random.
 *
 * <p>BlockHound finds its integrations on the class path: Netty's (reactor-netty's event loops and grpc-netty-shaded's
 * are non-blocking threads), Reactor's (its schedulers), and sema-reactor's, which allows the engine's short lock
 * section of a release (API.md §12) and nothing else.
 */
final class BlockingCalls {
    private static final int KEPT = 10;
    private static final AtomicLong COUNT = new AtomicLong();
    private static final Queue<String> FIRST = new ConcurrentLinkedQueue<>();
    private static volatile boolean installed;

    private BlockingCalls() {
    }

    static void install() {
        // BlockHound.install() would load the integrations itself, but with its own callback, which throws: this
        // loads them the same way (ServiceLoader, in their order), then sets the callback that counts.
        BlockHound.Builder builder = BlockHound.builder();
        ServiceLoader.load(BlockHoundIntegration.class).stream().map(ServiceLoader.Provider::get).sorted()
                .forEach(builder::with);
        builder.blockingMethodCallback(method -> {
            if (COUNT.incrementAndGet() <= KEPT) {
                FIRST.add(method + " on " + Thread.currentThread().getName() + where());
            }
        }).install();
        installed = true;
    }

    /** The frames that led to the blocking call, below BlockHound's and the JDK's own: where to look. */
    private static String where() {
        StringBuilder frames = new StringBuilder();
        int kept = 0;
        for (StackTraceElement frame : new Throwable().getStackTrace()) {
            String c = frame.getClassName();
            if (c.startsWith("reactor.blockhound.") || c.startsWith("java.") || c.startsWith("jdk.")
                    || c.startsWith(BlockingCalls.class.getName())) {
                continue;
            }
            frames.append(kept == 0 ? ", at " : " < ").append(c.substring(c.lastIndexOf('.') + 1)).append('.')
                    .append(frame.getMethodName());
            if (++kept == 6) {
                break;
            }
        }
        return frames.toString();
    }

    static boolean installed() {
        return installed;
    }

    static long count() {
        return COUNT.get();
    }

    static List<String> first() {
        return List.copyOf(FIRST);
    }
}
