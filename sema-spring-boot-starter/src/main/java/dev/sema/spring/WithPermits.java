package dev.sema.spring;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Holds permits of a registry semaphore for the duration of a call to a method of a Spring bean.
 *
 * {@snippet :
 * @Service
 * class PartnerClient {
 *     @WithPermits(value = "partner", timeout = "200ms", droppedOn = HttpServerErrorException.ServiceUnavailable.class)
 *     Quote quote(String sku) {
 *         return rest.get().uri("/quotes/{sku}", sku).retrieve().body(Quote.class);
 *     }
 *
 *     @WithPermits("partner")
 *     CompletableFuture<Quote> quoteAsync(String sku) {
 *         return http.sendAsync(request(sku), handler);   // the permit is held until this completes
 *     }
 * }
 * }
 *
 * <h2>Synchronous methods</h2>
 * The permits are acquired before the method runs, on the calling thread, and released when it returns
 * or throws. If they cannot be had within {@link #timeout()}, the method does not run and the call throws
 * {@link PermitUnavailableException} (or returns what the {@link #fallback()} returns). {@code timeout = "0"} is a
 * {@code tryAcquire}: its refusals are {@link dev.sema.Rejection#UNAVAILABLE}, not timeouts, so an adaptive
 * limit never counts them as drops (refusing load must not lower the limit and refuse more). A Redis semaphore
 * whose Redis cannot be reached refuses the same way (the exception's cause is the
 * {@code RedisSemaphoreException}), so that an outage is answered 503, not 500.
 *
 * <h2>Asynchronous methods</h2>
 * A method declared to return {@link java.util.concurrent.CompletionStage} or
 * {@link java.util.concurrent.CompletableFuture} is called once the permits are granted
 * ({@code acquireAsync}): at once, on the calling thread, when they are available, else on the thread
 * that grants them (the one that released them, or for a Redis semaphore a virtual thread). The call
 * returns a {@code CompletableFuture} at once; it completes as the method's stage does, and the permits
 * are released when that stage completes (before the returned future completes). An unavailable permit
 * fails the returned future with {@link PermitUnavailableException} instead of throwing, and so does an
 * exception thrown by the method (or a {@code null} it returns, as a {@code NullPointerException}). Cancelling
 * the returned future while it waits for the permits withdraws the request; once the method has run, its own
 * stage is not cancelled, and the permits stay held until it completes (the work it started may still run). With
 * {@code timeout = "0"} the permits are tried on the calling thread: for a Redis semaphore that is one round trip,
 * which waits at most the command timeout while Redis stalls.
 *
 * <h2>Reactive methods</h2>
 * A method declared to return {@code reactor.core.publisher.Mono} or {@code Flux} (with reactor-core and
 * {@code dev.sema:sema-reactor} on the class path) is called at once, as without the annotation, and its publisher is
 * returned wrapped in one of the same kind: each subscription acquires the permits first (through sema-reactor,
 * without blocking a thread: a subscription that must wait queues on the semaphore and is resumed on the thread whose
 * release served it), then subscribes the method's publisher, once, and holds the permits until it completes, fails or
 * is cancelled; they are given back before the terminal signal (and a {@code Mono}'s value) goes on downstream. A
 * {@code Mono} never subscribed takes no permits; one subscribed again ({@code retry}, {@code repeat}) acquires them
 * again. Cancelling a subscription that waits withdraws its request. A refusal is never thrown by the call: it is the
 * subscription's error signal, {@link PermitUnavailableException}, with the same causes as above (a
 * {@code TimeoutException} after {@link #timeout()}, none for {@code timeout = "0"}, a {@code RedisSemaphoreException}
 * while Redis cannot be reached), and so is a missing key (an {@code IllegalArgumentException}). In WebFlux it is
 * answered 503 with {@code Retry-After}, as in Spring MVC. {@code timeout = "0"} tries on the subscribing thread (a
 * Redis semaphore's round trip goes to a bounded-elastic thread). Partitions, keys and {@link #droppedOn()} apply as
 * to other methods (the latter to the publisher's error signal).
 * {@snippet :
 * @WithPermits(value = "partner", timeout = "200ms", fallback = "cachedQuote")
 * Mono<Quote> quote(String sku) {
 *     return webClient.get().uri("/quotes/{sku}", sku).retrieve().bodyToMono(Quote.class);
 * }
 *
 * Mono<Quote> cachedQuote(String sku) {       // or Quote cachedQuote(String sku): a value, emitted by the Mono
 *     return cache.get(sku);
 * }
 * }
 * A {@code Mono<T>} method's fallback returns a {@code Mono} of a {@code T}, or a {@code T} itself, which the returned
 * {@code Mono} emits ({@code null}: it completes empty; {@code void} only for a {@code Mono<Void>}); a
 * {@code Flux<T>} method's returns a {@code Flux} or a {@code Mono} of a {@code T}. It is called when the refusal is
 * signalled, on that thread (the subscribing one, or the library's timer after a timeout), so it must not block.
 * Another kind of {@code Publisher}, or a fallback that does not fit, stops the application at startup.
 *
 * <h2>Fallbacks</h2>
 * With {@link #fallback()}, a refused call (no permit in time, a closed semaphore, Redis unreachable) calls the
 * named method of the same bean with the same arguments instead, and returns what it returns; for an asynchronous
 * method the fallback's value, or the stage it returns, completes the returned future. The fallback runs without
 * permits, on the caller's thread when the refusal comes at once, else (an asynchronous wait that ended) on a
 * virtual thread of its own. It is called on the bean itself, not through its proxy, so its own annotations
 * ({@code @Transactional}, another {@code @WithPermits}) do not apply. It never runs for the method's own
 * exceptions, nor for an interrupted wait. Resilience4j's
 * {@code fallbackMethod} users will recognise it:
 * {@snippet :
 * @WithPermits(value = "partner", timeout = "0", fallback = "cachedQuote")
 * Quote quote(String sku) {
 *     return rest.get().uri("/quotes/{sku}", sku).retrieve().body(Quote.class);
 * }
 *
 * Quote cachedQuote(String sku, PermitUnavailableException refused) {   // the last parameter is optional
 *     return cache.get(sku);
 * }
 * }
 *
 * <h2>Partitions</h2>
 * With {@link #partition()}, the permits are those of a partition of the semaphore
 * ({@code sema.semaphores.<name>.partitions}): its view ({@link dev.sema.Semaphore#partition(String)}), which shares
 * the semaphore's limit with its guarantee and priority. A refusal then names the view ({@code "api/batch"}).
 * {@snippet :
 * @WithPermits(value = "api", partition = "batch", timeout = "2s")
 * Report export(long id) {
 *     return reports.render(id);
 * }
 * }
 *
 * <h2>Keyed families</h2>
 * With {@link #key()}, {@link #value()} names a keyed family ({@code sema.keyed.<name>}) and the permits are those
 * of the key the expression gives, evaluated at each call (the expression is parsed once, at startup). A refusal
 * names the key's semaphore ({@code "exports[acme]"}, on Redis {@code "exports:acme"}); a family at its
 * {@code max-keys} refuses a new key as a full semaphore refuses a request (503 in Spring MVC, the fallback if there
 * is one). A family on Redis ({@code redis: true}) takes {@code String.valueOf} of the key.
 * {@snippet :
 * @WithPermits(value = "exports", key = "#tenant.id", timeout = "0")
 * Report export(Tenant tenant, long id) {
 *     return reports.render(tenant, id);
 * }
 * }
 *
 * <h2>Interruption</h2>
 * A synchronous call whose wait is interrupted throws {@link PermitUnavailableException} (caused by the
 * {@link InterruptedException}) with the thread's interrupt status set again, and does not run the method.
 *
 * <h2>Adaptive limits</h2>
 * When the call fails with one of {@link #droppedOn()} (a subclass counts), the semaphore's
 * {@link dev.sema.AdaptiveLimit} ({@code sema.semaphores.<name>.adaptive}) is told the downstream dropped
 * the request ({@link dev.sema.AdaptiveLimit#dropped()}); the exception is passed on unchanged. The time
 * the permits are held is the adaptive limit's latency sample, so annotate the method that makes the
 * downstream call, not a larger one.
 *
 * <h2>Checked at startup</h2>
 * When the bean is created, every annotated method is checked: the semaphore must be in the
 * {@link SemaphoreRegistry} (or, with a {@link #key()} that parses, a keyed family), the {@link #partition()} one of
 * its partitions, {@link #permits()} within {@code 0..maxPermits()}, the timeout readable, and the
 * method must not return another kind of {@code CompletionStage}, nor a reactive {@code Publisher} other than a
 * {@code Mono} or {@code Flux} (or any, without sema-reactor), and the fallback must exist and fit. A mistake stops the
 * application with a message naming the method (and the fallback). {@link #value()}, {@link #partition()},
 * {@link #timeout()} and {@link #fallback()} may be property placeholders ({@code ${...}}).
 *
 * <h2>Proxies</h2>
 * As with Spring's other method annotations, the call must come through the bean's proxy: a call from
 * another method of the same object is not limited. The permits are acquired outside the bean's other
 * advice (a transaction, for instance, begins only once they are held).
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface WithPermits {

    /**
     * The name of the semaphore in the {@link SemaphoreRegistry}.
     *
     * @return the semaphore's name, or a {@code ${...}} placeholder for it
     */
    String value();

    /**
     * The partition of the semaphore whose permits the call holds ({@code sema.semaphores.<name>.partitions}):
     * {@code ""} (the default) for the semaphore's own, served after every partition's requests. A partition the
     * semaphore does not have stops the application at startup.
     *
     * @return the partition's name, a {@code ${...}} placeholder for it, or {@code ""} for none
     */
    String partition() default "";

    /**
     * For a keyed family ({@code sema.keyed.<name>}, named by {@link #value()}): a SpEL expression over the method's
     * parameters that gives the call's key, as the {@code key} of Spring's cache annotations does:
     * {@code "#tenant.id"}, {@code "#p0"}, {@code "#root.args[1]"}, {@code "@tenants.current()"}. The call holds
     * permits of that key's semaphore (and, with the family's parent, as many of the parent's). A key that comes out
     * {@code null} fails the call with an {@code IllegalArgumentException} naming the expression and the method
     * (never a shared key), and so does one the family refuses (on Redis, an empty key or one with a brace), naming
     * the key too; a key beyond the family's {@code max-keys} is a refusal, as when no permit came. Required
     * with a family and refused with a semaphore: either stops the application at startup, as does an expression
     * that does not parse.
     *
     * @return the key's expression, or {@code ""} for a semaphore
     */
    String key() default "";

    /**
     * How many permits the call holds.
     *
     * @return the number of permits, {@code 0..maxPermits()} of the semaphore
     */
    long permits() default 1;

    /**
     * How long to wait for the permits: {@code ""} (the default) waits as long as it takes; {@code "0"}
     * never waits (a {@code tryAcquire}); otherwise a duration, in Spring Boot's forms: {@code "200ms"},
     * {@code "2s"}, {@code "PT1S"} (a number alone is milliseconds).
     *
     * @return the timeout, or a {@code ${...}} placeholder for it
     */
    String timeout() default "";

    /**
     * The failures of the call that count as drops for the semaphore's adaptive limit (ignored when it has
     * none).
     *
     * @return the exception types
     */
    Class<? extends Throwable>[] droppedOn() default {};

    /**
     * A method of the same bean called instead of throwing {@link PermitUnavailableException} when no permit came:
     * none in time, a closed semaphore, a Redis semaphore whose Redis cannot be reached (never for an interrupted
     * wait, which throws, nor for the method's own exceptions, which pass through). It takes the method's
     * parameters, optionally followed by the {@code PermitUnavailableException} (or a supertype of it); it returns
     * what the method returns. For an asynchronous method it may return the stage's value or a
     * {@code CompletionStage} of it, either of which completes the returned future; for a {@code Mono} method, a
     * {@code Mono} or the value; for a {@code Flux} method, a {@code Flux} or a {@code Mono}. It runs without permits, on
     * the thread that learned of the refusal. A fallback that does not exist or does not fit stops the
     * application at startup, naming both methods. See the class documentation.
     *
     * @return the fallback method's name, a {@code ${...}} placeholder for it, or {@code ""} for none
     */
    String fallback() default "";
}
