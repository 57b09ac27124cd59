package dev.sema.spring;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * {@code @WithPermits(fallback = ...)} (API.md §9b): called instead of throwing when no permit came, for
 * synchronous and asynchronous methods, with or without the refusal as its last argument; never for the method's
 * own exceptions nor for an interrupted wait; a fallback that does not exist or does not fit stops the start,
 * naming both methods. And {@code timeout = "0"} as a {@code tryAcquire}: its refusals are {@code UNAVAILABLE},
 * never a timeout, so never a drop for an adaptive limit.
 */
@Timeout(30)
class FallbackTest {
    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SemaAutoConfiguration.class))
            .withPropertyValues("sema.semaphores.one.permits=1", "sema.semaphores.adaptive.permits=4",
                    "sema.semaphores.adaptive.adaptive.algorithm=aimd", "sema.semaphores.adaptive.adaptive.min-limit=1");

    /** The beans whose fallbacks fit. */
    static class Quotes {
        @WithPermits(value = "one", timeout = "0", fallback = "cached")
        public String quote(String sku) {
            return "live " + sku;
        }

        String cached(String sku) {
            return "cached " + sku;
        }

        @WithPermits(value = "one", timeout = "0", fallback = "explained")
        public String quoteExplained(String sku, int qty) {
            return "live " + sku + " x" + qty;
        }

        private String explained(String sku, int qty, PermitUnavailableException why) {
            return "refused by " + why.semaphore() + " for " + sku + " x" + qty;
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cached")
        public String failing(String sku) {
            throw new IllegalStateException("the method's own failure");
        }

        @WithPermits(value = "one", timeout = "0", fallback = "zero")
        public int count() {
            return 1;
        }

        int zero() {
            return 0;
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cachedAsync")
        public CompletableFuture<String> quoteAsync(String sku) {
            return CompletableFuture.completedFuture("live " + sku);
        }

        CompletionStage<String> cachedAsync(String sku, Throwable why) {
            return CompletableFuture.completedFuture("cached " + sku + " (" + why.getClass().getSimpleName() + ")");
        }

        @WithPermits(value = "one", timeout = "0", fallback = "cached")
        public CompletionStage<String> quoteAsyncPlainFallback(String sku) {
            return CompletableFuture.completedFuture("live " + sku);
        }

        @WithPermits(value = "one", timeout = "50ms", fallback = "cached")
        public CompletableFuture<String> quoteAsyncTimed(String sku) {
            return CompletableFuture.completedFuture("live " + sku);
        }

        @WithPermits(value = "one", fallback = "cached")
        public String quoteWaiting(String sku) {
            return "live " + sku;
        }

        @WithPermits(value = "adaptive", timeout = "0")
        public String tryAdaptive() {
            return "ok";
        }

        @WithPermits(value = "adaptive", timeout = "0")
        public CompletableFuture<String> tryAdaptiveAsync() {
            return CompletableFuture.completedFuture("ok");
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Fits {
        @Bean
        Quotes quotes() {
            return new Quotes();
        }
    }

    @Test
    void aRefusedCallReturnsTheFallbacksResultAndAGrantedOneTheMethods() {
        runner.withUserConfiguration(Fits.class).run(context -> {
            Quotes quotes = context.getBean(Quotes.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            assertThat(quotes.quote("a")).isEqualTo("live a");
            try (Permit held = one.acquire()) {
                assertThat(quotes.quote("a")).isEqualTo("cached a");
                assertThat(quotes.quoteExplained("b", 2)).isEqualTo("refused by one for b x2");
                assertThat(quotes.count()).isZero();
            }
            assertThat(quotes.quoteExplained("b", 2)).isEqualTo("live b x2");
            assertThat(one.availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void theMethodsOwnExceptionNeverTriggersTheFallback() {
        runner.withUserConfiguration(Fits.class).run(context -> {
            Quotes quotes = context.getBean(Quotes.class);
            assertThatThrownBy(() -> quotes.failing("a")).isInstanceOf(IllegalStateException.class)
                    .hasMessage("the method's own failure");
            assertThat(context.getBean(SemaphoreRegistry.class).get("one").availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void anAsynchronousMethodsFallbackCompletesTheReturnedFuture() {
        runner.withUserConfiguration(Fits.class).run(context -> {
            Quotes quotes = context.getBean(Quotes.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            try (Permit held = one.acquire()) {
                assertThat(quotes.quoteAsync("a").get(5, TimeUnit.SECONDS))
                        .isEqualTo("cached a (PermitUnavailableException)");
                assertThat(quotes.quoteAsyncPlainFallback("b").toCompletableFuture().get(5, TimeUnit.SECONDS))
                        .isEqualTo("cached b");
                // A timed wait that ends: the fallback runs once the timeout fires.
                assertThat(quotes.quoteAsyncTimed("c").get(5, TimeUnit.SECONDS)).isEqualTo("cached c");
            }
            assertThat(quotes.quoteAsync("a").get(5, TimeUnit.SECONDS)).isEqualTo("live a");
            assertThat(one.availablePermits()).isEqualTo(1);
        });
    }

    @Test
    void anInterruptedWaitThrowsInsteadOfCallingTheFallback() {
        runner.withUserConfiguration(Fits.class).run(context -> {
            Quotes quotes = context.getBean(Quotes.class);
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            AtomicReference<Object> outcome = new AtomicReference<>();
            try (Permit held = one.acquire()) {
                Thread caller = Thread.ofVirtual().start(() -> {
                    try {
                        outcome.set(quotes.quoteWaiting("a"));
                    } catch (RuntimeException e) {
                        outcome.set(e);
                    }
                });
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (one.queueLength() == 0 && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
                assertThat(one.queueLength()).isEqualTo(1);
                caller.interrupt();
                caller.join(10_000);
            }
            assertThat(outcome.get()).isInstanceOf(PermitUnavailableException.class);
            assertThat(((Throwable) outcome.get()).getCause()).isInstanceOf(InterruptedException.class);
        });
    }

    @Test
    void timeoutZeroRefusesAsUnavailableNeverAsATimeoutSoTheAdaptiveLimitDoesNotDrop() {
        runner.withUserConfiguration(Fits.class).run(context -> {
            Quotes quotes = context.getBean(Quotes.class);
            SemaphoreRegistry registry = context.getBean(SemaphoreRegistry.class);
            Semaphore adaptive = registry.get("adaptive");
            AdaptiveLimit limit = registry.adaptive("adaptive").orElseThrow();
            List<Rejection> rejections = new CopyOnWriteArrayList<>();
            adaptive.addListener(new SemaphoreListener() {
                @Override
                public void rejected(Semaphore s, long permits, Rejection why, long waitNanos) {
                    rejections.add(why);
                }
            });
            long before = limit.limit();
            try (Permit all = adaptive.acquire(adaptive.permits())) {
                for (int i = 0; i < 20; i++) {
                    assertThatThrownBy(quotes::tryAdaptive).isInstanceOf(PermitUnavailableException.class)
                            .hasNoCause();
                    assertThatThrownBy(() -> quotes.tryAdaptiveAsync().get(5, TimeUnit.SECONDS))
                            .isInstanceOf(ExecutionException.class).cause()
                            .isInstanceOf(PermitUnavailableException.class);
                }
            }
            assertThat(rejections).hasSize(40).containsOnly(Rejection.UNAVAILABLE);
            assertThat(limit.limit()).isEqualTo(before); // an AIMD limit halves on a drop
        });
    }

    /** One annotated method inherited by two beans, each with a fallback of its own. */
    abstract static class Base {
        @WithPermits(value = "one", timeout = "0", fallback = "fallback")
        public String quote() {
            return "live";
        }

        abstract String fallback();
    }

    static class First extends Base {
        @Override
        String fallback() {
            return "first";
        }
    }

    static class Second extends Base {
        @Override
        String fallback() {
            return "second";
        }
    }

    @Test
    void twoBeansThatInheritOneAnnotatedMethodEachCallTheirOwnFallback() {
        runner.withBean(First.class).withBean(Second.class).run(context -> {
            Semaphore one = context.getBean(SemaphoreRegistry.class).get("one");
            try (Permit held = one.acquire()) {
                assertThat(context.getBean(First.class).quote()).isEqualTo("first");
                assertThat(context.getBean(Second.class).quote()).isEqualTo("second");
            }
        });
    }

    static class TimedAsync {
        volatile Thread fallbackThread;

        @WithPermits(value = "one", timeout = "20ms", fallback = "cached")
        public CompletableFuture<String> quote() {
            return CompletableFuture.completedFuture("live");
        }

        String cached() {
            fallbackThread = Thread.currentThread();
            return "cached";
        }

        /** Read through the proxy, which calls the bean's own. */
        public Thread fallbackThread() {
            return fallbackThread;
        }
    }

    @Test
    void aFallbackAfterAnAsynchronousWaitRunsOnAVirtualThreadNotTheOneThatEndedTheWait() {
        runner.withBean(TimedAsync.class).run(context -> {
            TimedAsync bean = context.getBean(TimedAsync.class);
            try (Permit held = context.getBean(SemaphoreRegistry.class).get("one").acquire()) {
                assertThat(bean.quote().get(5, TimeUnit.SECONDS)).isEqualTo("cached");
            }
            assertThat(bean.fallbackThread().isVirtual()).isTrue();
            assertThat(bean.fallbackThread().getName()).isEqualTo("sema-fallback");
        });
    }

    // ---------------------------------------------------------------- misfits stop the start

    static class NoSuchFallback {
        @WithPermits(value = "one", fallback = "missing")
        public String quote(String sku) {
            return sku;
        }
    }

    static class WrongParameters {
        @WithPermits(value = "one", fallback = "cached")
        public String quote(String sku) {
            return sku;
        }

        String cached(int sku) {
            return "cached";
        }
    }

    static class WrongReturnType {
        @WithPermits(value = "one", fallback = "cached")
        public String quote(String sku) {
            return sku;
        }

        Integer cached(String sku) {
            return 0;
        }
    }

    static class WrongStageType {
        @WithPermits(value = "one", fallback = "cached")
        public CompletableFuture<String> quote(String sku) {
            return CompletableFuture.completedFuture(sku);
        }

        CompletableFuture<Integer> cached(String sku) {
            return CompletableFuture.completedFuture(0);
        }
    }

    static class WrongRefusalParameter {
        @WithPermits(value = "one", fallback = "cached")
        public String quote(String sku) {
            return sku;
        }

        String cached(String sku, IllegalStateException why) {
            return "cached";
        }
    }

    @Test
    void aFallbackThatDoesNotExistStopsTheStartNamingBothMethods() {
        startFails(NoSuchFallback.class, "@WithPermits(fallback) on " + NoSuchFallback.class.getName()
                + ".quote", "missing", "NoSuchFallback.missing(String) or missing(String, PermitUnavailableException)",
                "has no method named 'missing'");
    }

    @Test
    void aFallbackWithOtherParametersStopsTheStart() {
        startFails(WrongParameters.class, ".quote", "cached", "must be FallbackTest.WrongParameters.cached(String)",
                "not FallbackTest.WrongParameters.cached(int)");
    }

    @Test
    void aFallbackReturningSomethingElseStopsTheStart() {
        startFails(WrongReturnType.class, ".quote", "cached", "WrongReturnType.cached(String) returns"
                + " java.lang.Integer, which is not a java.lang.String");
    }

    @Test
    void anAsynchronousFallbackOfAnotherValueTypeStopsTheStart() {
        startFails(WrongStageType.class, ".quote", "cached", "whose value is not a java.lang.String");
    }

    @Test
    void aLastParameterThatCannotTakeTheRefusalStopsTheStart() {
        startFails(WrongRefusalParameter.class, ".quote", "cached", "not FallbackTest.WrongRefusalParameter.cached(String,"
                + " IllegalStateException)");
    }

    private void startFails(Class<?> bean, String setting, String value, String... reason) {
        runner.withBean(bean).run(context -> {
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
