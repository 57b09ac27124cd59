package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;

import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.reactivestreams.Publisher;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.context.runner.ContextConsumer;
import reactor.core.Disposable;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.publisher.Sinks;
import reactor.test.StepVerifier;

/**
 * {@code @WithPermits} on methods returning {@code Mono} and {@code Flux} (API.md §12): the permits are held from
 * subscription to termination (complete, error, cancel), a refusal is an error signal (never thrown at call time), the
 * annotation's timeout, partition, key and fallback apply, nothing is subscribed twice and a {@code Mono} never
 * subscribed takes nothing; bad declarations stop the start, naming the method.
 */
@Timeout(30)
class ReactiveWithPermitsTest {
    private static final Duration STEP = Duration.ofSeconds(10);

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class))
            .withPropertyValues("sema.semaphores.one.permits=1", "sema.semaphores.api.permits=2",
                    "sema.semaphores.api.partitions.batch=0.5", "sema.keyed.tenants.permits=1")
            .withBean(Service.class);

    /**
     * The reactive methods, each counting the subscriptions of what it returns. The bean is a class proxy: the tests
     * read its state through methods.
     */
    static class Service {
        private final AtomicInteger subscriptions = new AtomicInteger();
        private final AtomicInteger calls = new AtomicInteger();
        private final Sinks.One<String> gate = Sinks.one();

        AtomicInteger subscriptions() {
            return subscriptions;
        }

        AtomicInteger calls() {
            return calls;
        }

        Sinks.One<String> gate() {
            return gate;
        }

        @WithPermits("one")
        public Mono<String> held() {
            calls.incrementAndGet();
            Sinks.One<String> g = gate;
            return Mono.defer(() -> {
                subscriptions.incrementAndGet();
                return g.asMono();
            });
        }

        @WithPermits("one")
        public Flux<Integer> stream(Flux<Integer> source) {
            return source.doOnSubscribe(s -> subscriptions.incrementAndGet());
        }

        @WithPermits("one")
        public Mono<String> failing() {
            return Mono.error(new IllegalStateException("the method's own failure"));
        }

        @WithPermits(value = "one", timeout = "0")
        public Mono<String> tryOnce() {
            return Mono.fromCallable(() -> {
                subscriptions.incrementAndGet();
                return "live";
            });
        }

        @WithPermits(value = "one", timeout = "50ms")
        public Flux<String> timed() {
            return Flux.just("live");
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cachedValue")
        public Mono<String> withValueFallback(String sku) {
            return Mono.just("live " + sku);
        }

        String cachedValue(String sku) {
            return "cached " + sku;
        }

        @WithPermits(value = "one", timeout = "0", fallback = "nothing")
        public Mono<String> withNullFallback(String sku) {
            return Mono.just("live " + sku);
        }

        String nothing(String sku) {
            return null;
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cachedMono")
        public Mono<String> withMonoFallback(String sku) {
            return Mono.just("live " + sku);
        }

        Mono<String> cachedMono(String sku, PermitUnavailableException refused) {
            return Mono.just("cached " + sku + " (refused by " + refused.semaphore() + ")");
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cachedFlux")
        public Flux<String> withFluxFallback() {
            return Flux.just("live");
        }

        Flux<String> cachedFlux() {
            return Flux.just("cached", "values");
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cachedValue")
        public Mono<String> ownRefusal(String sku) {
            return Mono.error(new PermitUnavailableException("downstream", 1, Duration.ZERO, null));
        }

        @WithPermits(value = "tenants", key = "#tenant", timeout = "0")
        public Mono<String> forTenant(String tenant) {
            Sinks.One<String> g = gate;
            return g.asMono();
        }

        @WithPermits(value = "api", partition = "batch", timeout = "0")
        public Mono<String> batch() {
            return Mono.just("exported");
        }
    }

    private void run(ContextConsumer<AssertableApplicationContext> test) {
        runner.run(context -> {
            assertThat(context).hasNotFailed();
            test.accept(context);
        });
    }

    @Test
    void aMonoHoldsItsPermitsFromSubscriptionToTerminationAndGivesThemBackBeforeItsValue() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            Mono<String> mono = service.held();
            assertThat(one.availablePermits()).as("a Mono never subscribed takes nothing").isEqualTo(1);
            assertThat(service.subscriptions()).hasValue(0);
            StepVerifier.create(mono)
                    .then(() -> assertThat(one.availablePermits()).isZero())
                    .then(() -> service.gate().tryEmitValue("done"))
                    .assertNext(value -> {
                        assertThat(value).isEqualTo("done");
                        assertThat(one.availablePermits()).as("given back before the value").isEqualTo(1);
                    })
                    .expectComplete().verify(STEP);
            assertThat(service.subscriptions()).as("subscribed once").hasValue(1);
            assertThat(service.calls()).as("the method is called once, at the call").hasValue(1);
        });
    }

    @Test
    void aFluxHoldsItsPermitsUntilItCompletesOrFails() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            Sinks.Many<Integer> source = Sinks.many().unicast().onBackpressureBuffer();
            StepVerifier.create(service.stream(source.asFlux()))
                    .then(() -> source.tryEmitNext(1))
                    .expectNext(1)
                    .then(() -> assertThat(one.availablePermits()).isZero())
                    .then(() -> source.tryEmitNext(2))
                    .expectNext(2)
                    .then(() -> assertThat(one.availablePermits()).isZero())
                    .then(source::tryEmitComplete)
                    .expectComplete().verify(STEP);
            assertThat(one.availablePermits()).isEqualTo(1);
            StepVerifier.create(service.failing()).expectErrorMessage("the method's own failure").verify(STEP);
            assertThat(one.availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void cancellingGivesThePermitsBackOrWithdrawsTheWaitingRequest() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            Disposable running = service.stream(Flux.never()).subscribe();
            assertThat(one.availablePermits()).isZero();
            running.dispose();
            assertThat(one.availablePermits()).isEqualTo(1);
            assertThat(service.subscriptions()).hasValue(1);
            Disposable holding = service.held().subscribe();
            assertThat(one.availablePermits()).isZero();
            holding.dispose();
            assertThat(one.availablePermits()).isEqualTo(1);
            assertThat(service.subscriptions()).hasValue(2);

            Permit all = one.tryAcquire(1).orElseThrow();
            Disposable waiting = service.held().subscribe();
            assertThat(one.queueLength()).isEqualTo(1);
            waiting.dispose();
            assertThat(one.queueLength()).isZero();
            all.close();
            assertThat(one.availablePermits()).isEqualTo(1);
            assertThat(service.subscriptions()).as("a withdrawn request never subscribes the method's Mono").hasValue(2);
        });
    }

    @Test
    void aWaitingSubscriptionIsServedWhenThePermitsComeBack() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            Permit all = one.tryAcquire(1).orElseThrow();
            service.gate().tryEmitValue("served");
            StepVerifier.create(service.held())
                    .then(() -> assertThat(one.queueLength()).isEqualTo(1))
                    .then(() -> assertThat(service.subscriptions()).hasValue(0))
                    .then(all::close)
                    .expectNext("served")
                    .expectComplete().verify(STEP);
            assertThat(one.availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void aRefusalIsAnErrorSignalNeverAThrowAndTheMethodsPublisherIsNotSubscribed() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            try (Permit all = one.tryAcquire(1).orElseThrow()) {
                Mono<String> tried = service.tryOnce(); // no exception here
                StepVerifier.create(tried).expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(PermitUnavailableException.class);
                    PermitUnavailableException refusal = (PermitUnavailableException) e;
                    assertThat(refusal.semaphore()).isEqualTo("one");
                    assertThat(refusal.permits()).isEqualTo(1);
                    assertThat(refusal.getCause()).as("a try, not a timeout").isNull();
                }).verify(STEP);
                StepVerifier.create(service.timed()).expectErrorSatisfies(e -> {
                    assertThat(e).isInstanceOf(PermitUnavailableException.class);
                    assertThat(e.getCause()).isInstanceOf(TimeoutException.class);
                }).verify(STEP);
                assertThat(service.subscriptions()).hasValue(0);
            }
            StepVerifier.create(service.tryOnce()).expectNext("live").expectComplete().verify(STEP);
            StepVerifier.create(service.timed()).expectNext("live").expectComplete().verify(STEP);
            assertThat(one.availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void aRefusedCallFallsBackToAValueAMonoOrAFlux() {
        run(context -> {
            Service service = context.getBean(Service.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            StepVerifier.create(service.withValueFallback("a")).expectNext("live a").expectComplete().verify(STEP);
            try (Permit all = one.tryAcquire(1).orElseThrow()) {
                StepVerifier.create(service.withValueFallback("a")).expectNext("cached a").expectComplete().verify(STEP);
                StepVerifier.create(service.withNullFallback("a")).as("null: an empty Mono").expectComplete()
                        .verify(STEP);
                StepVerifier.create(service.withMonoFallback("b")).expectNext("cached b (refused by one)")
                        .expectComplete().verify(STEP);
                StepVerifier.create(service.withFluxFallback()).expectNext("cached", "values").expectComplete()
                        .verify(STEP);
            }
            StepVerifier.create(service.withFluxFallback()).expectNext("live").expectComplete().verify(STEP);
        });
    }

    @Test
    void theMethodsOwnFailuresNeverFallBackNorCountAsRefusals() {
        run(context -> {
            Service service = context.getBean(Service.class);
            StepVerifier.create(service.ownRefusal("a")).expectErrorSatisfies(e -> assertThat(
                    ((PermitUnavailableException) e).semaphore()).isEqualTo("downstream")).verify(STEP);
            assertThat(context.getBean(SemaphoreRegistry.class).get("one").availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void theKeyAndThePartitionApply() {
        run(context -> {
            Service service = context.getBean(Service.class);
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            KeyedSemaphore<Object> tenants = registry.keyed("tenants");
            Disposable acme = service.forTenant("acme").subscribe();
            assertThat(tenants.size()).isEqualTo(1);
            StepVerifier.create(service.forTenant("acme")).expectErrorSatisfies(e -> assertThat(
                    ((PermitUnavailableException) e).semaphore()).isEqualTo("tenants[acme]")).verify(STEP);
            Mono<String> other = service.forTenant("globex");
            service.gate().tryEmitValue("ok");
            StepVerifier.create(other).expectNext("ok").expectComplete().verify(STEP);
            acme.dispose();
            assertThat(tenants.size()).isZero();
            StepVerifier.create(service.forTenant(null)).as("no key: an error signal, never a shared key")
                    .expectError(IllegalArgumentException.class).verify(STEP);

            Semaphore api = registry.get("api");
            try (Permit all = api.tryAcquire(2).orElseThrow()) {
                StepVerifier.create(service.batch()).expectErrorSatisfies(e -> assertThat(
                        ((PermitUnavailableException) e).semaphore()).isEqualTo("api/batch")).verify(STEP);
            }
            StepVerifier.create(service.batch()).expectNext("exported").expectComplete().verify(STEP);
        });
    }

    /** A call whose failure is a drop for the adaptive limit. */
    static class Dropping {
        @WithPermits(value = "adaptive", droppedOn = IllegalStateException.class)
        public Mono<String> call(boolean overloaded) {
            return overloaded ? Mono.error(new IllegalStateException("the partner answered 503")) : Mono.just("ok");
        }
    }

    @Test
    void droppedOnErrorSignalsTellTheAdaptiveLimit() {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.adaptive.permits=10",
                        "sema.semaphores.adaptive.adaptive.algorithm=aimd", "sema.semaphores.adaptive.adaptive.min-limit=1")
                .withBean(Dropping.class).run(context -> {
                    assertThat(context).hasNotFailed();
                    Dropping dropping = context.getBean(Dropping.class);
                    Semaphore adaptive = context.getBean(SemaphoreRegistry.class).get("adaptive");
                    long before = adaptive.permits();
                    StepVerifier.create(dropping.call(false)).expectNext("ok").expectComplete().verify(STEP);
                    assertThat(adaptive.permits()).isEqualTo(before);
                    StepVerifier.create(dropping.call(true)).expectError(IllegalStateException.class).verify(STEP);
                    assertThat(adaptive.permits()).isLessThan(before);
                    assertThat(adaptive.availablePermits()).isEqualTo(adaptive.permits());
                });
    }

    /** Calls of a Redis semaphore whose Redis cannot be reached. */
    static class OnRedis {
        @WithPermits(value = "shared", timeout = "0")
        public Mono<String> tryCall() {
            return Mono.just("ok");
        }

        @WithPermits("shared")
        public Flux<String> call() {
            return Flux.just("ok");
        }
    }

    @Test
    void aRedisThatCannotBeReachedIsARefusalCausedByTheRedisFailure() {
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(SemaRedisAutoConfiguration.class, SemaAutoConfiguration.class))
                .withPropertyValues("sema.redis.uri=redis://127.0.0.1:1?timeout=1s", "sema.semaphores.shared.permits=2",
                        "sema.semaphores.shared.redis=true")
                .withBean(OnRedis.class).run(context -> {
                    assertThat(context).hasNotFailed();
                    OnRedis onRedis = context.getBean(OnRedis.class);
                    for (Publisher<String> call : List.of(onRedis.tryCall(), onRedis.call())) {
                        StepVerifier.create(call).expectErrorSatisfies(e -> {
                            assertThat(e).isInstanceOf(PermitUnavailableException.class);
                            assertThat(((PermitUnavailableException) e).semaphore()).isEqualTo("shared");
                            assertThat(e.getCause()).isInstanceOf(dev.sema.redis.RedisSemaphoreException.class);
                        }).verify(STEP);
                    }
                });
    }

    /** A Mono method whose fallback returns a Flux. */
    static class FluxFallbackOfAMono {
        @WithPermits(value = "one", fallback = "cached")
        public Mono<String> quote(String sku) {
            return Mono.just(sku);
        }

        Flux<String> cached(String sku) {
            return Flux.just(sku);
        }
    }

    /** A Flux method whose fallback returns a plain value. */
    static class ValueFallbackOfAFlux {
        @WithPermits(value = "one", fallback = "cached")
        public Flux<String> quotes(String sku) {
            return Flux.just(sku);
        }

        String cached(String sku) {
            return sku;
        }
    }

    /** A Mono of String whose fallback gives an Integer. */
    static class WrongValueType {
        @WithPermits(value = "one", fallback = "cached")
        public Mono<String> quote(String sku) {
            return Mono.just(sku);
        }

        Mono<Integer> cached(String sku) {
            return Mono.just(1);
        }
    }

    /** A Mono method whose fallback returns void. */
    static class VoidFallback {
        @WithPermits(value = "one", fallback = "cached")
        public Mono<String> quote(String sku) {
            return Mono.just(sku);
        }

        void cached(String sku) {
        }
    }

    /** A reactive method declared to return a Publisher that is neither a Mono nor a Flux. */
    static class PlainPublisher {
        @WithPermits("one")
        public Publisher<String> quotes() {
            return Flux.just("a");
        }
    }

    @Test
    void aFallbackOfAMonoMethodMustGiveAMonoOrAValue() {
        startFails(FluxFallbackOfAMono.class, ".quote", "cached", "returns reactor.core.publisher.Flux<java.lang.String>",
                "returns a Mono of java.lang.String, or a java.lang.String itself");
        startFails(WrongValueType.class, ".quote", "cached", "whose value is not a java.lang.String");
        startFails(VoidFallback.class, ".quote", "cached", "returns void");
    }

    @Test
    void aFallbackOfAFluxMethodMustGiveAFluxOrAMono() {
        startFails(ValueFallbackOfAFlux.class, ".quotes", "cached", "returns java.lang.String",
                "returns a Flux or a Mono of java.lang.String");
    }

    @Test
    void aPublisherThatIsNeitherAMonoNorAFluxStopsTheStart() {
        startFails(PlainPublisher.class, ".quotes", "one", "org.reactivestreams.Publisher",
                "must be declared to return reactor.core.publisher.Mono or Flux");
    }

    private void startFails(Class<?> bean, String setting, String value, String... reason) {
        new ApplicationContextRunner().withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class))
                .withPropertyValues("sema.semaphores.one.permits=1").withBean(bean).run(context -> {
                    assertThat(context.getStartupFailure()).isNotNull();
                    Throwable t = context.getStartupFailure();
                    while (t != null && !(t instanceof SemaConfigurationException)) {
                        t = t.getCause();
                    }
                    assertThat(t).as("a SemaConfigurationException in %s", context.getStartupFailure()).isNotNull();
                    SemaConfigurationException e = (SemaConfigurationException) t;
                    assertThat(e.setting()).contains(setting);
                    assertThat(e.value()).isEqualTo(value);
                    assertThat(e.reason()).contains(reason);
                });
    }
}
