package dev.sema.spring;

import dev.sema.Permit;
import dev.sema.Semaphore;
import java.lang.reflect.Method;
import java.util.concurrent.CompletionStage;
import org.aopalliance.intercept.MethodInvocation;
import org.reactivestreams.Publisher;
import org.springframework.core.ResolvableType;
import org.springframework.util.ClassUtils;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

/**
 * {@code @WithPermits} on a method declared to return {@link Mono} or {@link Flux}: the call returns at once a
 * {@code Mono} or {@code Flux} of the same kind that, on each subscription, acquires the permits (through sema-reactor,
 * without blocking a thread), then subscribes the method's publisher, and holds the permits until it completes, fails
 * or is cancelled ({@link ReactorPermits}). A refusal is the error signal {@link PermitUnavailableException}, or the
 * fallback's publisher.
 *
 * <p>Fallbacks ({@link #misfit}): a {@code Mono<T>} method's fallback returns a {@code Mono} of a {@code T} (or
 * subtype), or a {@code T} itself, which the returned {@code Mono} emits ({@code null}: empty; {@code void} only for a
 * {@code Mono<Void>}); a {@code Flux<T>} method's returns a {@code Flux} or a {@code Mono} of a {@code T}. The fallback
 * is called when the refusal is signalled, on that thread: a subscribing one, or the library's timer after a timeout.
 *
 * <p>Loaded only when reactor-core and sema-reactor are on the class path ({@link WithPermitsInterceptor}).
 */
final class ReactiveWithPermits implements WithPermitsInterceptor.Style {
    private static final ReactiveWithPermits MONO = new ReactiveWithPermits(true);
    private static final ReactiveWithPermits FLUX = new ReactiveWithPermits(false);

    /** Whether the method returns a {@code Mono} (else a {@code Flux}). */
    private final boolean mono;

    private ReactiveWithPermits(boolean mono) {
        this.mono = mono;
    }

    /** The style of a method declared to return {@code returns}: {@code Mono} or {@code Flux}, else {@code null}. */
    static WithPermitsInterceptor.Style of(Class<?> returns) {
        return returns == Mono.class ? MONO : returns == Flux.class ? FLUX : null;
    }

    @Override
    public Object invoke(WithPermitsInterceptor.Plan plan, MethodInvocation invocation) throws Throwable {
        Semaphore semaphore;
        try {
            semaphore = plan.semaphore(invocation);
        } catch (IllegalArgumentException noKey) {
            return mono ? Mono.error(noKey) : Flux.error(noKey);
        }
        // Called now, as it would be without the annotation: it assembles its publisher, whose subscription (the
        // work) the permits guard. Its own exceptions pass through, as they would.
        Object returned;
        try {
            returned = invocation.proceed();
        } catch (Throwable t) {
            plan.failed(t);
            throw t;
        }
        if (returned == null) {
            NullPointerException npe = new NullPointerException(ClassUtils.getQualifiedMethodName(plan.method())
                    + " returned null instead of a " + (mono ? "Mono" : "Flux"));
            return mono ? Mono.error(npe) : Flux.error(npe);
        }
        Mono<Permit> acquire = ReactorPermits.acquire(semaphore, plan.permits(), plan.timeout());
        if (mono) {
            @SuppressWarnings("unchecked") // the method's own Mono, whatever its values
            Mono<Object> source = (Mono<Object>) returned;
            return ReactorPermits.holding(acquire, permit -> source, plan::failed).onErrorResume(
                    ReactorPermits.Refused.class, refused -> Mono.from(refused(plan, invocation, refused.refusal())));
        }
        @SuppressWarnings("unchecked") // the method's own Flux, whatever its values
        Flux<Object> source = (Flux<Object>) returned;
        return ReactorPermits.holdingMany(acquire, permit -> source, plan::failed).onErrorResume(
                ReactorPermits.Refused.class, refused -> refused(plan, invocation, refused.refusal()));
    }

    /** What a refused subscription gets: the fallback's publisher, or the refusal. */
    @SuppressWarnings("unchecked") // checked at startup: the fallback's values fit the method's ({@link #misfit})
    private Publisher<Object> refused(WithPermitsInterceptor.Plan plan, MethodInvocation invocation,
            PermitUnavailableException refusal) {
        Fallback fallback = plan.fallback();
        if (fallback == null) {
            return Mono.error(refusal);
        }
        Object returned;
        try {
            returned = fallback.call(invocation.getThis(), invocation.getArguments(), refusal);
        } catch (Throwable t) {
            return Mono.error(t);
        }
        if (returned instanceof Publisher<?> publisher) {
            return (Publisher<Object>) publisher;
        }
        if (fallback.returnsDeferred()) { // declared to return a Mono or Flux, yet returned null
            return Mono.error(new NullPointerException("fallback " + Fallback.describe(fallback.method())
                    + " returned null instead of a " + ClassUtils.getShortName(fallback.method().getReturnType())));
        }
        return Mono.justOrEmpty(returned); // a Mono method's fallback of the value itself
    }

    /**
     * Why {@code fallback} does not fit {@code annotated}, or {@code null}: see the class documentation.
     */
    @Override
    public String misfit(Method annotated, Method fallback, Class<?> targetClass) {
        ResolvableType value = ResolvableType.forMethodReturnType(annotated, targetClass).getGeneric(0);
        Class<?> given = fallback.getReturnType();
        String kind = mono ? "Mono" : "Flux";
        String wanted = mono ? "a Mono of " + value + ", or a " + value + " itself" : "a Flux or a Mono of " + value;
        if (given == void.class) {
            return mono && value.resolve(Object.class) == Void.class ? null : "returns void, where the fallback of a "
                    + kind + "<" + value + "> method returns " + wanted;
        }
        ResolvableType givenValue;
        if (given == Mono.class || (!mono && given == Flux.class)) {
            givenValue = ResolvableType.forMethodReturnType(fallback, targetClass).getGeneric(0);
        } else if (!mono || Publisher.class.isAssignableFrom(given) || CompletionStage.class.isAssignableFrom(given)) {
            return "returns " + fallback.getGenericReturnType().getTypeName() + ", where the fallback of a " + kind + "<"
                    + value + "> method returns " + wanted;
        } else {
            givenValue = Fallback.returnedValue(fallback, targetClass);
        }
        return Fallback.valueMisfit(value, givenValue, fallback, "the " + kind + " of " + Fallback.describe(annotated)
                + " emits");
    }
}
