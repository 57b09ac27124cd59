package dev.sema.grpc;

import static dev.sema.grpc.Fixture.awaitAllBack;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import dev.sema.Permit;
import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.Channel;
import io.grpc.ClientCall;
import io.grpc.ClientInterceptor;
import io.grpc.ClientInterceptors;
import io.grpc.ForwardingClientCall;
import io.grpc.ForwardingClientCallListener;
import io.grpc.Grpc;
import io.grpc.InsecureChannelCredentials;
import io.grpc.InsecureServerCredentials;
import io.grpc.ManagedChannel;
import io.grpc.Metadata;
import io.grpc.MethodDescriptor;
import io.grpc.Server;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import io.grpc.ServerInterceptors;
import io.grpc.ServerServiceDefinition;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.netty.shaded.io.netty.channel.EventLoop;
import io.grpc.netty.shaded.io.netty.channel.EventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.MultiThreadIoEventLoopGroup;
import io.grpc.netty.shaded.io.netty.channel.nio.NioIoHandler;
import io.grpc.netty.shaded.io.netty.util.concurrent.FastThreadLocalThread;
import io.grpc.netty.shaded.io.netty.util.internal.ThreadExecutorMap;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.ServerCalls;
import java.io.IOException;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.ReentrantLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import reactor.blockhound.BlockHound;
import reactor.blockhound.BlockingOperationError;
import reactor.blockhound.integration.BlockHoundIntegration;

/**
 * With BlockHound installed (once per JVM, with every integration on the class path: Netty's, which makes its
 * event-loop threads ones that must not block, and sema-grpc's {@code SemaBlockHoundIntegration}), both
 * interceptors run on Netty's event loops ({@code directExecutor()} on the server and the channels) and no call
 * blocks one of them, queued, granted, cancelled, past its deadline or refused; while a real blocking call there is
 * still reported.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class EventLoopBlockHoundTest {
    /** Every blocking call BlockHound reported, also those whose error gRPC only logged or turned into a status. */
    private static final Queue<String> BLOCKED = new ConcurrentLinkedQueue<>();

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final List<Server> servers = new ArrayList<>();
    private final List<ManagedChannel> channels = new ArrayList<>();

    @BeforeAll
    static void install() {
        BlockHound.builder()
                .blockingMethodCallback(method -> {
                    String where = StackWalker.getInstance().walk(frames -> frames
                            .map(f -> f.getClassName() + "." + f.getMethodName())
                            .filter(f -> f.startsWith("dev.sema.") && !f.contains("BlockHoundTest"))
                            .findFirst().orElse("?"));
                    BLOCKED.add(method + " on " + Thread.currentThread().getName() + " in " + where);
                    throw new BlockingOperationError(method);
                })
                .loadIntegrations() // every one ServiceLoader finds: Netty's (shaded in gRPC's), ours
                .install();
    }

    @BeforeEach
    void clear() {
        BLOCKED.clear();
    }

    @AfterEach
    void close() throws InterruptedException {
        for (ManagedChannel c : channels) {
            c.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
        for (Server s : servers) {
            s.shutdownNow().awaitTermination(10, TimeUnit.SECONDS);
        }
        timer.shutdownNow();
    }

    @Test
    void integrationIsFoundByServiceLoader() {
        List<Class<?>> found = ServiceLoader.load(BlockHoundIntegration.class).stream()
                .<Class<?>>map(ServiceLoader.Provider::type).toList();
        assertThat(found).contains(dev.sema.grpc.blockhound.SemaBlockHoundIntegration.class);
    }

    @Test
    void sleepInAHandlerOnTheEventLoopIsReported() throws IOException {
        ServerServiceDefinition sleepy = ServerServiceDefinition.builder("sema.test.Echo")
                .addMethod(EchoService.UNARY, ServerCalls.asyncUnaryCall((request, response) -> {
                    try {
                        Thread.sleep(10); // on the event loop: directExecutor
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    response.onNext(request);
                    response.onCompleted();
                }))
                .build();
        Semaphore api = Semaphore.builder().name("api").permits(4).build();
        Server server = server(ServerInterceptors.intercept(sleepy,
                SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(5)).build()));
        Channel channel = channel(server, null);
        // BlockHound's error leaves the handler; gRPC logs it, and the call ends at its deadline
        StatusRuntimeException failed = catchThrowableOfType(StatusRuntimeException.class,
                () -> ClientCalls.blockingUnaryCall(channel, EchoService.UNARY,
                        CallOptions.DEFAULT.withDeadlineAfter(2, TimeUnit.SECONDS), "x"));
        assertThat(failed).as("the handler's call fails").isNotNull();
        assertThat(BLOCKED).anyMatch(s -> s.contains("sleep") && s.contains("worker-ELG"));
    }

    /**
     * Forces what is rare in practice: an event loop that releases a permit (a call ending) or queues or withdraws
     * a request while another thread holds sema-core's lock (here the test thread, through reflection), so that it
     * parks there. Each is allowed; the same park on a lock of the application's is reported.
     */
    @Test
    void anEventLoopParkingOnSemaCoresLockIsAllowedAndOnAnyOtherLockIsNot() throws Exception {
        EventLoopGroup loops = new MultiThreadIoEventLoopGroup(1, NioIoHandler.newFactory());
        try {
            EventLoop loop = loops.next();
            Semaphore semaphore = Semaphore.create(2);
            ReentrantLock engineLock = engineLock(semaphore);
            Permit held = semaphore.tryAcquire(2).orElseThrow();

            // queueing (takeOrEnqueue), with a timeout on the timer (failAfter)
            Queue<Permit> granted = new ConcurrentLinkedQueue<>();
            underContention(loop, engineLock, () -> semaphore.acquireAsync(1, Duration.ofSeconds(30))
                    .thenAccept(granted::add));
            awaitTrue(() -> semaphore.queueLength() == 1);
            CompletableFuture<Permit> second = semaphore.acquireAsync(1);
            awaitTrue(() -> semaphore.queueLength() == 2);

            // withdrawing (withdraw)
            underContention(loop, engineLock, () -> second.cancel(false));
            awaitTrue(() -> semaphore.queueLength() == 1);

            // releasing to a queued request (releaseSlow), which takes its timeout off the timer (unschedule)
            underContention(loop, engineLock, held::close);
            awaitTrue(() -> granted.size() == 1);
            granted.forEach(Permit::close);
            assertThat(BLOCKED).isEmpty();
            assertThat(semaphore.availablePermits()).isEqualTo(2);

            // the same wait on a lock of the application's is a blocking call
            ReentrantLock applicationLock = new ReentrantLock();
            underContention(loop, applicationLock, () -> {
                applicationLock.lock();
                applicationLock.unlock();
            });
            awaitTrue(() -> !BLOCKED.isEmpty());
            assertThat(BLOCKED).singleElement().asString().contains("park");
        } finally {
            loops.shutdownGracefully(0, 1, TimeUnit.SECONDS).syncUninterruptibly();
        }
    }

    /** Runs {@code action} on {@code loop} while {@code lock} is held here, until the loop parks waiting for it. */
    private static void underContention(EventLoop loop, ReentrantLock lock, Runnable action) {
        AtomicReference<Thread> worker = new AtomicReference<>();
        lock.lock();
        try {
            loop.execute(() -> {
                worker.set(Thread.currentThread());
                try {
                    action.run();
                } catch (BlockingOperationError reported) {
                    // in BLOCKED
                }
            });
            // parked, or reported by BlockHound when about to park
            awaitTrue(() -> !BLOCKED.isEmpty() || worker.get() != null && lock.hasQueuedThread(worker.get())
                    && worker.get().getState() == Thread.State.WAITING);
        } finally {
            lock.unlock();
        }
    }

    private static void awaitTrue(java.util.function.BooleanSupplier condition) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime()).as("condition not met in time").isLessThan(deadline);
            Thread.onSpinWait();
        }
    }

    private static ReentrantLock engineLock(Semaphore semaphore) throws ReflectiveOperationException {
        Field field = semaphore.getClass().getDeclaredField("lock");
        field.setAccessible(true);
        return (ReentrantLock) field.get(semaphore);
    }

    /**
     * 2,000 calls over four connections (so over several of the server's event loops, which release and grant
     * at the same time), unary and bidirectional streaming, some cancelled by the client, some with a deadline
     * that passes while they wait, queued on a server limit of 8 with a maxWait and a client limit of 256, on
     * event loops throughout: none blocks, the server never runs more than 8 at once, the client never has more
     * than 256 in flight, and every permit is back at the end.
     */
    @Test
    void twoThousandCallsQueuedOnTheEventLoopsBlockNoThread() throws Exception {
        long seed = Long.getLong("sema.seed", System.nanoTime());
        System.out.println("EventLoopBlockHoundTest seed: " + seed + " (-Dsema.seed=" + seed + " replays it)");
        SplittableRandom random = new SplittableRandom(seed);

        Semaphore api = Semaphore.builder().name("api").permits(8).build();
        Semaphore outbound = Semaphore.builder().name("outbound").permits(256).build();
        // "sleep:n" waits on the handler's own event loop: a ScheduledThreadPoolExecutor's queue has a lock
        EchoService service = new EchoService(ThreadExecutorMap::currentExecutor);
        InFlight inFlight = new InFlight();
        Set<String> interceptThreads = ConcurrentHashMap.newKeySet();
        ServerInterceptor onEventLoop = new ServerInterceptor() {
            @Override
            public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call,
                    Metadata headers, ServerCallHandler<ReqT, RespT> next) {
                Thread t = Thread.currentThread();
                interceptThreads.add((t instanceof FastThreadLocalThread ? "event loop " : "other ") + t.getName());
                return next.startCall(call, headers);
            }
        };
        Server server = server(ServerInterceptors.intercept(service.definition(), inFlight,
                SemaServerInterceptor.builder(api).maxWait(Duration.ofMillis(500)).build(), onEventLoop));
        ClientInFlight clientInFlight = new ClientInFlight();
        SemaClientInterceptor limit = SemaClientInterceptor.builder(outbound).maxWait(Duration.ofSeconds(30)).build();
        List<Channel> connections = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            connections.add(channel(server, limit, clientInFlight));
        }

        int n = 2_000;
        CountDownLatch closed = new CountDownLatch(n);
        Map<Status.Code, AtomicInteger> outcomes = new ConcurrentHashMap<>();
        for (int i = 0; i < n; i++) {
            Channel channel = connections.get(i % connections.size());
            boolean streaming = random.nextInt(4) == 0;
            CallOptions options = CallOptions.DEFAULT;
            int kind = random.nextInt(10);
            if (kind == 0) {
                options = options.withDeadlineAfter(20 + random.nextInt(200), TimeUnit.MILLISECONDS);
            }
            MethodDescriptor<String, String> method = streaming ? EchoService.BIDI : EchoService.UNARY;
            ClientCall<String, String> call = channel.newCall(method, options);
            call.start(new ClientCall.Listener<>() {
                @Override
                public void onClose(Status status, Metadata trailers) {
                    outcomes.computeIfAbsent(status.getCode(), c -> new AtomicInteger()).incrementAndGet();
                    closed.countDown();
                }
            }, new Metadata());
            call.request(Integer.MAX_VALUE);
            if (streaming) {
                for (int m = 0; m < 3; m++) {
                    call.sendMessage("m" + m);
                }
            } else {
                call.sendMessage(random.nextBoolean() ? "echo:x" : "sleep:" + (1 + random.nextInt(5)));
            }
            call.halfClose();
            if (kind == 1) { // cancelled (after the last call on it: gRPC refuses a halfClose after a cancel)
                timer.schedule(() -> call.cancel("cancelled by the test", null), random.nextInt(100),
                        TimeUnit.MILLISECONDS); // at once, while queued, or while it runs
            }
        }
        assertThat(closed.await(100, TimeUnit.SECONDS)).as("every call closed").isTrue();

        assertThat(BLOCKED).as("blocking calls reported").isEmpty();
        assertThat(outcomes.keySet()).as("outcomes " + outcomes).isSubsetOf(Status.Code.OK, Status.Code.CANCELLED,
                Status.Code.DEADLINE_EXCEEDED, Status.Code.UNAVAILABLE);
        assertThat(outcomes.get(Status.Code.OK)).as("outcomes " + outcomes).isNotNull(); // how many: the load's
        System.out.println("EventLoopBlockHoundTest outcomes: " + outcomes);
        assertThat(inFlight.max.get()).as("handlers at once").isBetween(1, 8);
        assertThat(service.maxActive.get()).as("handlers running at once").isLessThanOrEqualTo(8);
        assertThat(clientInFlight.max.get()).as("client calls in flight at once").isBetween(1, 256);
        assertThat(interceptThreads).as("where the server interceptor ran").allMatch(t -> t.startsWith("event loop"));
        awaitAllBack(api);
        awaitAllBack(outbound);
        assertThat(BLOCKED).as("blocking calls reported").isEmpty();
    }

    private Server server(ServerServiceDefinition service) throws IOException {
        Server server = Grpc.newServerBuilderForPort(0, InsecureServerCredentials.create())
                .directExecutor() // the handlers, and the interceptors, on Netty's event loops
                .addService(service)
                .build()
                .start();
        servers.add(server);
        return server;
    }

    private Channel channel(Server server, ClientInterceptor limit, ClientInterceptor... inner) {
        ManagedChannel managed = Grpc.newChannelBuilderForAddress("127.0.0.1", server.getPort(),
                        InsecureChannelCredentials.create())
                .directExecutor() // the calls' listeners, and so the client interceptor's releases, on event loops
                .build();
        channels.add(managed);
        Channel channel = ClientInterceptors.intercept(managed, inner);
        return limit == null ? channel : ClientInterceptors.intercept(channel, limit);
    }

    /** Counts the client calls between their start and their close: below the limit, those that hold a permit. */
    private static final class ClientInFlight implements ClientInterceptor {
        final AtomicInteger now = new AtomicInteger();
        final AtomicInteger max = new AtomicInteger();

        @Override
        public <ReqT, RespT> ClientCall<ReqT, RespT> interceptCall(MethodDescriptor<ReqT, RespT> method,
                CallOptions callOptions, Channel next) {
            return new ForwardingClientCall.SimpleForwardingClientCall<>(next.newCall(method, callOptions)) {
                @Override
                public void start(Listener<RespT> responseListener, Metadata headers) {
                    max.accumulateAndGet(now.incrementAndGet(), Math::max);
                    super.start(new ForwardingClientCallListener.SimpleForwardingClientCallListener<>(
                            responseListener) {
                        @Override
                        public void onClose(Status status, Metadata trailers) {
                            now.decrementAndGet();
                            super.onClose(status, trailers);
                        }
                    }, headers);
                }
            };
        }
    }
}
