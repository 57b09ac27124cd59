package dev.sema.grpc;

import static dev.sema.grpc.Fixture.awaitAllBack;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowableOfType;

import com.google.common.util.concurrent.ListenableFuture;
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
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SemaClientInterceptorTest {
    private static Semaphore client(long permits) {
        return Semaphore.builder().name("client").permits(permits).build();
    }

    @Test
    void boundsTheCallsInFlightAndAllSucceed() throws Exception {
        Semaphore client = client(3);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .build())) {
            List<ListenableFuture<String>> calls = new ArrayList<>();
            for (int i = 0; i < 60; i++) {
                calls.add(f.future("sleep:2", null));
            }
            for (ListenableFuture<String> c : calls) {
                assertThat(c.get(20, TimeUnit.SECONDS)).isEqualTo("slept");
            }
            assertThat(f.service.maxActive.get()).isBetween(1, 3);
            awaitAllBack(client);
        }
    }

    @Test
    void aWaitingCallDefersWithoutBlockingTheCallerAndStartsWhenAPermitComesFree() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .maxWait(Duration.ofSeconds(30)).build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);
            Fixture.await("the server to start the first call", () -> f.service.started.get() == 1);

            // The caller's thread returns at once: were it blocked until a permit came free, this test would hang,
            // as only this thread frees the permit (releaseHeld below), and fail at its timeout.
            ListenableFuture<String> second = f.future("echo:second", null);
            assertThat(second.isDone()).isFalse();
            assertThat(client.queueLength()).isEqualTo(1);
            assertThat(f.service.started.get()).as("the server has not seen the waiting call").isEqualTo(1);

            f.releaseHeld();
            assertThat(first.get(10, TimeUnit.SECONDS)).isEqualTo("done");
            assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo("second");
            awaitAllBack(client);
        }
    }

    @Test
    void aWaitingCallFailsWithUnavailableAfterMaxWait() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .maxWait(Duration.ofMillis(150)).build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);

            long start = System.nanoTime();
            ListenableFuture<String> second = f.future("echo:second", null);
            assertThat(second.isDone()).isFalse();
            assertThatThrownBy(() -> second.get(10, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .cause().satisfies(t -> {
                        Status status = Status.fromThrowable(t);
                        assertThat(status.getCode()).isEqualTo(Status.Code.UNAVAILABLE);
                        assertThat(status.getDescription()).contains("semaphore 'client'").contains("150 ms");
                    });
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(Duration.ofMillis(140).toNanos());
            assertThat(f.service.started.get()).isEqualTo(1);

            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(client);
        }
    }

    @Test
    void blockingStubWaitsAndIsRefusedThroughItsOwnExecutor() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .maxWait(Duration.ofMillis(100)).build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);

            CompletableFuture<String> blocked = CompletableFuture.supplyAsync(() -> f.blocking("echo:y", null));
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            assertThat(blocked.get(10, TimeUnit.SECONDS)).isEqualTo("y");
            awaitAllBack(client);
        }
    }

    @Test
    void zeroMaxWaitRefusesAtOnce() throws Exception {
        Semaphore client = Semaphore.builder().name("client").permits(0).maxPermits(1).build();
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .maxWait(Duration.ZERO).build())) {
            StatusRuntimeException refused = catchThrowableOfType(StatusRuntimeException.class,
                    () -> f.blocking("echo:x", null));
            assertThat(refused.getStatus().getCode()).isEqualTo(Status.Code.UNAVAILABLE);
            assertThat(refused.getStatus().getDescription()).contains("'client'").contains("none free");
            assertThat(client.queueLength()).isZero();
        }
    }

    @Test
    void theDeadlineBoundsTheWait() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);
            ClientCall<String, String> call = f.newCall(EchoService.UNARY,
                    CallOptions.DEFAULT.withDeadlineAfter(100, TimeUnit.MILLISECONDS), null);
            assertThatThrownBy(() -> ClientCalls.futureUnaryCall(call, "echo:late").get(10, TimeUnit.SECONDS))
                    .cause().satisfies(t -> {
                        Status status = Status.fromThrowable(t);
                        assertThat(status.getCode()).isEqualTo(Status.Code.DEADLINE_EXCEEDED);
                        assertThat(status.getDescription()).contains("'client'");
                    });
            assertThat(client.queueLength()).isZero();
            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(client);
        }
    }

    @Test
    void cancelWhileWaitingWithdrawsTheRequest() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);
            ClientCall<String, String> call = f.unaryCall(null);
            LinkedBlockingQueue<Status> closed = new LinkedBlockingQueue<>();
            call.start(new ClientCall.Listener<>() {
                @Override
                public void onClose(Status status, Metadata trailers) {
                    closed.add(status);
                }
            }, new Metadata());
            call.request(1);
            call.sendMessage("echo:never");
            call.halfClose();
            assertThat(client.queueLength()).isEqualTo(1);

            call.cancel("caller gives up", null);
            Status status = closed.poll(10, TimeUnit.SECONDS);
            assertThat(status.getCode()).isEqualTo(Status.Code.CANCELLED);
            assertThat(status.getDescription()).isEqualTo("caller gives up");
            assertThat(client.queueLength()).isZero();

            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            awaitAllBack(client);
            assertThat(f.service.started.get()).isEqualTo(1);
        }
    }

    @Test
    void messagesSentWhileWaitingAreReplayedInOrder() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .build())) {
            ListenableFuture<String> first = f.future("hold", null);
            Fixture.await("the first call to hold the permit", () -> client.availablePermits() == 0);

            LinkedBlockingQueue<String> received = new LinkedBlockingQueue<>();
            StreamObserver<String> requests = ClientCalls.asyncBidiStreamingCall(
                    f.newCall(EchoService.BIDI, CallOptions.DEFAULT, null), new StreamObserver<>() {
                        @Override
                        public void onNext(String value) {
                            received.add(value);
                        }

                        @Override
                        public void onError(Throwable t) {
                            received.add("error " + Status.fromThrowable(t));
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
            assertThat(client.queueLength()).isEqualTo(1);
            assertThat(received).isEmpty();

            f.releaseHeld();
            first.get(10, TimeUnit.SECONDS);
            List<String> got = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                got.add(received.poll(10, TimeUnit.SECONDS));
            }
            assertThat(got).containsExactly("m0", "m1", "m2", "m3", "m4", "completed");
            awaitAllBack(client);
        }
    }

    @Test
    void aCallTakesItsMethodsWeight() throws Exception {
        Semaphore client = client(4);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .permits(method -> method.getFullMethodName().endsWith("/Unary") ? 3 : 1).build())) {
            ListenableFuture<String> held = f.future("hold", null);
            Fixture.await("the held call to take its weight", () -> client.availablePermits() == 1);
            ListenableFuture<String> second = f.future("echo:second", null);
            assertThat(client.queueLength()).isEqualTo(1);
            f.releaseHeld();
            held.get(10, TimeUnit.SECONDS);
            assertThat(second.get(10, TimeUnit.SECONDS)).isEqualTo("second");
            awaitAllBack(client);
        }
    }

    @Test
    void thePermitIsBackBeforeTheListenerHearsOnClose() throws Exception {
        Semaphore client = client(1);
        try (Fixture f = new Fixture((io.grpc.ServerInterceptor) null, SemaClientInterceptor.builder(client)
                .maxWait(Duration.ZERO).build())) {
            for (int i = 0; i < 20; i++) { // sequential calls with limit 1 and no wait: each finds the permit free
                assertThat(f.blocking("echo:" + i, null)).isEqualTo(Integer.toString(i));
            }
            awaitAllBack(client);
        }
    }
}
