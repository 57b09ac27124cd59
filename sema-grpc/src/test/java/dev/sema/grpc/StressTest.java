package dev.sema.grpc;

import static dev.sema.grpc.Fixture.awaitAllBack;
import static org.assertj.core.api.Assertions.assertThat;

import com.google.common.util.concurrent.ListenableFuture;
import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import io.grpc.CallOptions;
import io.grpc.ClientCall;
import io.grpc.Metadata;
import io.grpc.ServerInterceptors;
import io.grpc.Status;
import io.grpc.stub.ClientCalls;
import io.grpc.stub.StreamObserver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Many concurrent calls through both interceptors, unary and streaming, with random work, deadlines and cancels:
 * the calls holding a server permit never exceed its limit, and at the end nothing is held or queued anywhere.
 */
@Tag("stress")
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class StressTest {
    private static final Metadata.Key<String> TENANT = Metadata.Key.of("x-tenant", Metadata.ASCII_STRING_MARSHALLER);
    private static final int CALLS = 3000;

    @Test
    void boundHoldsAndNothingLeaksUnderRandomCancelsAndDeadlines() throws Exception {
        long seed = System.nanoTime();
        System.out.println("StressTest seed " + seed);
        SplittableRandom random = new SplittableRandom(seed);
        Semaphore api = Semaphore.builder().name("api").permits(8).build();
        KeyedSemaphore<String> tenants = KeyedSemaphore.<String>builder().name("tenants").permits(3).maxKeys(6)
                .build();
        Semaphore client = Semaphore.builder().name("client").permits(24).build();
        InFlight inFlight = new InFlight();
        SemaServerInterceptor limit = SemaServerInterceptor.builder(api).keyedBy(tenants, TENANT)
                .maxWait(Duration.ofMillis(20)).build();
        try (Fixture f = new Fixture(def -> ServerInterceptors.intercept(def, inFlight, limit),
                SemaClientInterceptor.builder(client).maxWait(Duration.ofMillis(200)).build())) {
            List<CompletableFuture<Status.Code>> outcomes = new ArrayList<>();
            for (int i = 0; i < CALLS; i++) {
                Metadata headers = Fixture.headers(TENANT, "t" + random.nextInt(8));
                CallOptions options = random.nextInt(4) == 0
                        ? CallOptions.DEFAULT.withDeadlineAfter(1 + random.nextInt(20), TimeUnit.MILLISECONDS)
                        : CallOptions.DEFAULT;
                boolean streaming = random.nextInt(5) == 0;
                ClientCall<String, String> call = f.newCall(streaming ? EchoService.BIDI : EchoService.UNARY,
                        options, headers);
                CompletableFuture<Status.Code> outcome = new CompletableFuture<>();
                if (streaming) {
                    StreamObserver<String> requests = ClientCalls.asyncBidiStreamingCall(call, new StreamObserver<>() {
                        @Override
                        public void onNext(String value) {
                        }

                        @Override
                        public void onError(Throwable t) {
                            outcome.complete(Status.fromThrowable(t).getCode());
                        }

                        @Override
                        public void onCompleted() {
                            outcome.complete(Status.Code.OK);
                        }
                    });
                    int messages = random.nextInt(4);
                    for (int m = 0; m < messages; m++) {
                        requests.onNext("m" + m);
                    }
                    if (random.nextInt(4) == 0) {
                        requests.onError(new RuntimeException("cancelled on purpose"));
                    } else {
                        requests.onCompleted();
                    }
                } else {
                    ListenableFuture<String> future = ClientCalls.futureUnaryCall(call, "sleep:" + random.nextInt(4));
                    future.addListener(() -> {
                        try {
                            future.get();
                            outcome.complete(Status.Code.OK);
                        } catch (ExecutionException e) {
                            outcome.complete(Status.fromThrowable(e.getCause()).getCode());
                        } catch (Exception e) {
                            outcome.complete(Status.Code.CANCELLED);
                        }
                    }, Runnable::run);
                    if (random.nextInt(6) == 0) {
                        int delay = random.nextInt(5);
                        f.timer.schedule(() -> future.cancel(true), delay, TimeUnit.MILLISECONDS);
                    }
                }
                outcomes.add(outcome);
                if (i % 50 == 0) {
                    Thread.sleep(1);
                }
            }
            Map<Status.Code, Integer> counts = new EnumMap<>(Status.Code.class);
            for (CompletableFuture<Status.Code> o : outcomes) {
                counts.merge(o.get(60, TimeUnit.SECONDS), 1, Integer::sum);
            }
            System.out.println("StressTest outcomes " + counts);
            assertThat(inFlight.max.get()).isBetween(1, 8);
            assertThat(counts).containsKey(Status.Code.OK);
            assertThat(counts.keySet()).isSubsetOf(Status.Code.OK, Status.Code.UNAVAILABLE, Status.Code.CANCELLED,
                    Status.Code.DEADLINE_EXCEEDED);
            awaitAllBack(api);
            awaitAllBack(client);
            Fixture.await("every key to be idle", () -> tenants.size() == 0);
            Fixture.await("every server call to end", () -> inFlight.now.get() == 0);
        }
    }
}
