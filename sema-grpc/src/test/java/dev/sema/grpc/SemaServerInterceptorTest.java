package dev.sema.grpc;

import static dev.sema.grpc.Fixture.awaitAllBack;
import static dev.sema.grpc.Fixture.headers;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.common.util.concurrent.ListenableFuture;
import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.Status;
import io.grpc.StatusRuntimeException;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SemaServerInterceptorTest {
    private static final Metadata.Key<String> CLASS =
            Metadata.Key.of("x-traffic-class", Metadata.ASCII_STRING_MARSHALLER);
    private static final Metadata.Key<String> TENANT = Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER);

    private static Semaphore api(long permits) {
        return Semaphore.builder().name("api").permits(permits).build();
    }

    private static Status statusOf(Throwable t) {
        return Status.fromThrowable(t);
    }

    private static Metadata trailersOf(Throwable t) {
        return Status.trailersFromThrowable(t);
    }

    @ParameterizedTest
    @ValueSource(longs = {0, 5000})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void boundIsNeverExceededUnderConcurrentCalls(long maxWaitMillis) throws Exception {
        Semaphore api = api(4);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofMillis(maxWaitMillis))
                .build(), null)) {
            List<ListenableFuture<String>> calls = new ArrayList<>();
            for (int i = 0; i < 64; i++) {
                calls.add(f.future("sleep:2", null));
            }
            int ok = 0;
            for (ListenableFuture<String> c : calls) {
                try {
                    assertThat(c.get(20, TimeUnit.SECONDS)).isEqualTo("slept");
                    ok++;
                } catch (ExecutionException e) {
                    assertThat(statusOf(e.getCause()).getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                }
            }
            assertThat(f.service.maxActive.get()).isBetween(1, 4);
            if (maxWaitMillis > 0) {
                assertThat(ok).isEqualTo(64);
            } else {
                assertThat(ok).isBetween(4, 64);
            }
            awaitAllBack(api);
        }
    }

    @Test
    void refusedCallIsUnavailableNamingTheSemaphoreWithARetryPushback() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).build(), null)) {
            ListenableFuture<String> holding = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);

            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(refused.getStatus().getDescription()).contains("semaphore 'api'").contains("none free");
            assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isEqualTo("1000");
            assertThat(f.service.started.get()).isEqualTo(1);

            f.releaseHeld();
            assertThat(holding.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            awaitAllBack(api);
            assertThat(f.blocking("echo:again", null)).isEqualTo("again");
        }
    }

    @Test
    void retryPushbackIsConfigurable() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(0).maxPermits(1).build();
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).retryPushback(Duration.ofMillis(250))
                .build(), null)) {
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(refused.getStatus().getDescription()).contains("none free");
            assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isEqualTo("250");
        }
    }

    @Test
    void closedSemaphoreRefusesWithUnavailable() throws Exception {
        Semaphore api = api(1);
        api.close();
        for (Duration maxWait : List.of(Duration.ZERO, Duration.ofSeconds(1))) {
            try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(maxWait).build(), null)) {
                StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                        () -> f.blocking("echo:x", null));
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(refused.getStatus().getDescription()).contains("'api'").contains("closed");
                assertThat(f.service.started.get()).isZero();
                assertThat(api.availablePermits()).isEqualTo(1);
            }
        }
    }

    @Test
    void waitingCallStartsWhenAPermitComesFree() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(10)).build(),
                null)) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            ListenableFuture<String> second = f.future("echo:second", null);
            Fixture.await("the second call to queue", () -> api.queueLength() == 1);
            assertThat(second.isDone()).isFalse();
            assertThat(f.service.started.get()).isEqualTo(1);

            f.releaseHeld();
            assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo("second");
            awaitAllBack(api);
        }
    }

    @Test
    void waitingCallIsRefusedAfterMaxWait() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofMillis(100)).build(),
                null)) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            long start = System.nanoTime();
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(Duration.ofMillis(90).toNanos());
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(refused.getStatus().getDescription()).contains("'api'").contains("within");
            assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isEqualTo("1000");
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(api);
        }
    }

    @Test
    void clientCancelWhileQueuedLeavesNothingHeld() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(30)).build(),
                null)) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            ListenableFuture<String> queued = f.future("echo:never", null);
            Fixture.await("the second call to queue", () -> api.queueLength() == 1);

            queued.cancel(true);
            Fixture.await("the cancelled call to leave the queue", () -> api.queueLength() == 0);
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(api);
            assertThat(f.service.started.get()).isEqualTo(1);
        }
    }

    @Test
    void deadlineWhileQueuedLeavesNothingHeld() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(30)).build(),
                null)) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            ClientCall<String, String> call = f.newCall(EchoService.UNARY,
                    CallOptions.DEFAULT.withDeadlineAfter(100, TimeUnit.MILLISECONDS), null);
            assertThatThrownBy(() -> ClientCalls.futureUnaryCall(call, "echo:late").get(10, TimeUnit.SECONDS))
                    .cause().satisfies(t -> assertThat(statusOf(t).getCode())
                            .isEqualTo(Status.Code.DEADLINE_EXCEEDED));
            Fixture.await("the expired call to leave the queue", () -> api.queueLength() == 0);
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(api);
            assertThat(f.service.started.get()).isEqualTo(1);
        }
    }

    /** How a streaming call ends, for {@link #permitIsHeldForTheWholeStreamingCall}. */
    enum Ending { COMPLETED, CLIENT_CANCEL, DEADLINE }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(Ending.class)
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void permitIsHeldForTheWholeStreamingCall(Ending ending) throws Exception {
        for (Duration maxWait : List.of(Duration.ZERO, Duration.ofSeconds(5))) {
            Semaphore api = api(1);
            try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(maxWait).build(), null)) {
                CallOptions options = ending == Ending.DEADLINE
                        ? CallOptions.DEFAULT.withDeadlineAfter(300, TimeUnit.MILLISECONDS) : CallOptions.DEFAULT;
                ClientCall<String, String> call = f.newCall(EchoService.BIDI, options, null);
                LinkedBlockingQueue<Object> received = new LinkedBlockingQueue<>();
                StreamObserver<String> requests = ClientCalls.asyncBidiStreamingCall(call, new StreamObserver<>() {
                    @Override
                    public void onNext(String value) {
                        received.add(value);
                    }

                    @Override
                    public void onError(Throwable t) {
                        received.add(statusOf(t).getCode());
                    }

                    @Override
                    public void onCompleted() {
                        received.add("completed");
                    }
                });
                for (int i = 0; i < 3; i++) {
                    requests.onNext("m" + i);
                    assertThat(received.poll(10, TimeUnit.SECONDS)).isEqualTo("m" + i);
                    assertThat(api.availablePermits()).as("held while the stream is open").isZero();
                }
                switch (ending) {
                    case COMPLETED -> {
                        requests.onCompleted();
                        assertThat(received.poll(10, TimeUnit.SECONDS)).isEqualTo("completed");
                    }
                    case CLIENT_CANCEL -> {
                        requests.onError(new RuntimeException("client gives up"));
                        assertThat(received.poll(10, TimeUnit.SECONDS)).isEqualTo(Status.Code.CANCELLED);
                    }
                    case DEADLINE -> assertThat(received.poll(10, TimeUnit.SECONDS))
                            .isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                }
                awaitAllBack(api);
            }
        }
    }

    @Test
    void aStreamingCallThatWaitedGetsWhatItsClientSentMeanwhileInOrder() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(30)).build(),
                null)) {
            Permit busy = api.acquire();
            LinkedBlockingQueue<String> received = new LinkedBlockingQueue<>();
            StreamObserver<String> requests = ClientCalls.asyncBidiStreamingCall(
                    f.newCall(EchoService.BIDI, CallOptions.DEFAULT, null), new StreamObserver<>() {
                        @Override
                        public void onNext(String value) {
                            received.add(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                            received.add("error " + statusOf(t));
                        }

                        @Override
                        public void onCompleted() {
                            received.add("completed");
                        }
                    });
            for (int i = 0; i < 5; i++) {
                requests.onNext("m" + i);
            }
            requests.onCompleted();
            Fixture.await("the call to queue", () -> api.queueLength() == 1);
            assertThat(f.service.started.get()).isZero();

            busy.close();
            List<String> got = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                got.add(received.poll(10, TimeUnit.SECONDS));
            }
            assertThat(got).containsExactly("m0", "m1", "m2", "m3", "m4", "completed");
            awaitAllBack(api);
        }
    }

    @Test
    void aGrantRacingWithTheClientsCancelIsGivenBack() throws Exception {
        Semaphore api = api(1);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(30)).build(),
                null)) {
            for (int i = 0; i < 200; i++) {
                Permit busy = api.acquire();
                ListenableFuture<String> call = f.future("echo:" + i, null);
                Fixture.await("the call to queue", () -> api.queueLength() == 1);
                Thread releaser = Thread.ofPlatform().start(busy::close);
                call.cancel(true);
                releaser.join();
                Fixture.await("the permit to come back (round " + i + ")", () -> api.availablePermits() == 1);
                assertThat(api.queueLength()).isZero();
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"fail", "throw"})
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void permitIsReleasedWhenTheHandlerFails(String request) throws Exception {
        for (Duration maxWait : List.of(Duration.ZERO, Duration.ofSeconds(5))) {
            Semaphore api = api(1);
            try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(maxWait).build(), null)) {
                StatusRuntimeException failed = catchThrowableOfType(StatusRuntimeException.class,
                        () -> f.blocking(request, null));
                assertThat(failed.getStatus().getCode()).isIn(Status.Code.INTERNAL, Status.Code.UNKNOWN);
                awaitAllBack(api);
                assertThat(f.blocking("echo:after", null)).isEqualTo("after");
                awaitAllBack(api);
            }
        }
    }

    @Test
    void handlerStartedAfterAWaitThatThrowsGivesThePermitBack() throws Exception {
        Semaphore api = api(1);
        io.grpc.ServerInterceptor throwing = new io.grpc.ServerInterceptor() {
            @Override
            public <ReqT, RespT> io.grpc.ServerCall.Listener<ReqT> interceptCall(io.grpc.ServerCall<ReqT, RespT> call,
                    Metadata headers, io.grpc.ServerCallHandler<ReqT, RespT> next) {
                if ("yes".equals(headers.get(CLASS))) {
                    throw new IllegalStateException("startCall fails");
                }
                return next.startCall(call, headers);
            }
        };
        SemaServerInterceptor limit = SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(5)).build();
        // the limit outside, the throwing interceptor inside: its exception is the handler's startCall's
        try (Fixture g = new Fixture(def -> io.grpc.ServerInterceptors.intercept(
                io.grpc.ServerInterceptors.intercept(def, throwing), limit), null)) {
            ListenableFuture<String> first = g.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            ListenableFuture<String> failing = g.future("echo:x", headers(CLASS, "yes"));
            Fixture.await("the second call to queue", () -> api.queueLength() == 1);
            g.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            assertThatThrownBy(() -> failing.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class);
            awaitAllBack(api);
        }
    }

    @Test
    void partitionMetadataPicksThePartitionAndAnUnknownOneThePlainSemaphore() throws Exception {
        Semaphore api = Semaphore.builder().name("api").permits(2)
                .partition("interactive", 0.5).partition("batch", 0.5).build();
        Permit all = api.acquire(2);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).partitionBy(CLASS)
                .maxWait(Duration.ofSeconds(30)).build(), null)) {
            ListenableFuture<String> batch = f.future("echo:batch", headers(CLASS, "batch"));
            Fixture.await("the batch call to queue", () -> api.partition("batch").queueLength() == 1);
            ListenableFuture<String> unknown = f.future("echo:unknown", headers(CLASS, "nonsense"));
            ListenableFuture<String> none = f.future("echo:none", null);
            Fixture.await("the other calls to queue", () -> api.queueLength() == 3);
            assertThat(api.partition("interactive").queueLength()).isZero();
            assertThat(api.partition("batch").queueLength()).isEqualTo(1);

            all.close();
            assertThat(batch.get(10, TimeUnit.SECONDS)).isEqualTo("batch");
            assertThat(unknown.get(10, TimeUnit.SECONDS)).isEqualTo("unknown");
            assertThat(none.get(10, TimeUnit.SECONDS)).isEqualTo("none");
            awaitAllBack(api);
        }
    }

    @Test
    void partitionByNeedsAPartitionedSemaphore() {
        assertThatThrownBy(() -> SemaServerInterceptor.builder(api(1)).partitionBy(CLASS))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("'api'");
    }

    @Test
    void keysAreIndependentAndAFullKeyIsRefused() throws Exception {
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(1).build();
        Semaphore api = api(10);
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).keyedBy(tenants, TENANT).build(), null)) {
            ListenableFuture<String> a = f.future("hold", headers(TENANT, "a"));
            Fixture.await("tenant a to hold its permit", () -> tenants.get("a").availablePermits() == 0);

            assertThat(f.blocking("echo:b", headers(TENANT, "b"))).isEqualTo("b");
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:a2", headers(TENANT, "a")));
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(refused.getStatus().getDescription()).contains("'tenants[a]'");
            assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isEqualTo("1000");
            assertThat(api.availablePermits()).as("the refused call holds none of the semaphore's").isEqualTo(9);

            f.releaseHeld();
            a.get(10, TimeUnit.SECONDS);
            awaitAllBack(api);
            Fixture.await("every key to be idle", () -> tenants.size() == 0);
        }
    }

    @Test
    void aRefusalOfTheSemaphoreGivesTheKeysPermitBack() throws Exception {
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(1).build();
        Semaphore api = api(1);
        for (Duration maxWait : List.of(Duration.ZERO, Duration.ofMillis(100))) {
            try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).keyedBy(tenants, TENANT)
                    .maxWait(maxWait).build(), null)) {
                ListenableFuture<String> a = f.future("hold", headers(TENANT, "a"));
                Fixture.await("tenant a to hold the permit", () -> api.availablePermits() == 0);
                StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                        () -> f.blocking("echo:b", headers(TENANT, "b")));
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(refused.getStatus().getDescription()).contains("'api'");
                assertThat(tenants.get("b").availablePermits()).isEqualTo(1);
                f.releaseHeld();
                a.get(10, TimeUnit.SECONDS);
                awaitAllBack(api);
                Fixture.await("every key to be idle", () -> tenants.size() == 0);
            }
        }
    }

    @Test
    void aCallWithoutItsKeyIsInvalid() throws Exception {
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(1).build();
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(tenants, TENANT).build(), null)) {
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.INVALID_ARGUMENT);
            assertThat(refused.getStatus().getDescription()).contains("'x-tenant'").contains("'tenants'");
            assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isNull();
            assertThat(f.service.started.get()).isZero();
            assertThat(f.blocking("echo:y", headers(TENANT, "t"))).isEqualTo("y");
            Fixture.await("every key to be idle", () -> tenants.size() == 0);
        }
    }

    @Test
    void tooManyKeysIsUnavailableWithPushback() throws Exception {
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(1).maxKeys(1)
                .build();
        for (Duration maxWait : List.of(Duration.ZERO, Duration.ofSeconds(1))) {
            try (Fixture f = new Fixture(SemaServerInterceptor.builder(tenants, TENANT).maxWait(maxWait).build(),
                    null)) {
                ListenableFuture<String> a = f.future("hold", headers(TENANT, "a"));
                Fixture.await("tenant a to hold its permit", () -> tenants.size() == 1);
                StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                        () -> f.blocking("echo:b", headers(TENANT, "b")));
                assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                assertThat(refused.getStatus().getDescription()).contains("'tenants[b]'");
                assertThat(trailersOf(refused).get(SemaServerInterceptor.RETRY_PUSHBACK)).isEqualTo("1000");
                f.releaseHeld();
                a.get(10, TimeUnit.SECONDS);
                Fixture.await("every key to be idle", () -> tenants.size() == 0);
            }
        }
    }

    @Test
    void aCallThatWaitedStartsOnTheGivenExecutor() throws Exception {
        Semaphore api = api(1);
        ExecutorService starter = Executors.newSingleThreadExecutor(r -> new Thread(r, "starter"));
        try (Fixture f = new Fixture(SemaServerInterceptor.builder(api).maxWait(Duration.ofSeconds(10))
                .executor(starter).build(), null)) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> api.availablePermits() == 0);
            ListenableFuture<String> second = f.future("echo:second", null);
            Fixture.await("the second call to queue", () -> api.queueLength() == 1);
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo("second");
            awaitAllBack(api);
        } finally {
            starter.shutdownNow();
        }
    }

    @Test
    void aCallTakesItsWeight() throws Exception {
        Semaphore api = api(10);
        SemaServerInterceptor limit = SemaServerInterceptor.builder(api)
                .permits(call -> call.getMethodDescriptor().getType() == io.grpc.MethodDescriptor.MethodType.UNARY
                        ? 3 : 20)
                .build();
        try (Fixture f = new Fixture(limit, null)) {
            ListenableFuture<String> held = f.future("hold", null);
            Fixture.await("the held call to take its weight", () -> api.availablePermits() == 7);
            ClientCall<String, String> tooHeavy = f.newCall(EchoService.BIDI, CallOptions.DEFAULT, null);
            LinkedBlockingQueue<Status> closed = new LinkedBlockingQueue<>();
            tooHeavy.start(new ClientCall.Listener<>() {
                @Override
                public void onClose(Status status, Metadata trailers) {
                    closed.add(status);
                }
            }, new Metadata());
            tooHeavy.halfClose();
            Status status = closed.poll(10, TimeUnit.SECONDS);
            assertThat(status.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(status.getDescription()).contains("'api'").contains("20");
            f.releaseHeld();
            held.get(10, TimeUnit.SECONDS);
            awaitAllBack(api);
        }
    }

    @Test
    void builderRefusesNegativeDurations() {
        assertThatThrownBy(() -> SemaServerInterceptor.builder(api(1)).maxWait(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> SemaServerInterceptor.builder(api(1)).retryPushback(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class);
    }

}
