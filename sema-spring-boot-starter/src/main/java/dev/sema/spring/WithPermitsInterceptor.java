package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.Permit;
import dev.sema.Semaphore;
import dev.sema.SemaphoreClosedException;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.springframework.aop.support.AopUtils;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.config.ConfigurableBeanFactory;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * The advice of {@link WithPermits}: acquires, calls, releases. What each annotated method needs (the
 * semaphore, the timeout, whether it is asynchronous) is worked out once, into a {@link Plan}.
 *
 * <p>No monitor is held anywhere here: a blocked acquire parks its (possibly virtual) thread inside the
 * semaphore, which never pins a carrier.
 */
final class WithPermitsInterceptor implements MethodInterceptor {
    private static final System.Logger LOG = System.getLogger(WithPermitsInterceptor.class.getName());
    private static final String PUBLISHER = "org.reactivestreams.Publisher";

    private final ObjectProvider<SemaphoreRegistry> registry;
    private final ConfigurableBeanFactory beanFactory;
    private final ConcurrentHashMap<Method, Plan> plans = new ConcurrentHashMap<>();

    WithPermitsInterceptor(ObjectProvider<SemaphoreRegistry> registry, ConfigurableBeanFactory beanFactory) {
        this.registry = registry;
        this.beanFactory = beanFactory;
    }

    /**
     * What one annotated method does.
     *
     * @param semaphore the semaphore
     * @param permits how many permits a call holds
     * @param timeout how long a call waits for them; {@code null}: as long as it takes
     * @param droppedOn the failures that are drops
     * @param adaptive the semaphore's adaptive limit, or {@code null}
     * @param async whether the method returns a {@code CompletionStage}
     * @param method the method, for messages
     */
    record Plan(Semaphore semaphore, long permits, Duration timeout, Class<? extends Throwable>[] droppedOn,
            AdaptiveLimit adaptive, boolean async, Method method) {

        void failed(Throwable failure) {
            if (adaptive == null || droppedOn.length == 0) {
                return;
            }
            Throwable t = unwrap(failure);
            for (Class<? extends Throwable> type : droppedOn) {
                if (type.isInstance(t)) {
                    adaptive.dropped();
                    return;
                }
            }
        }

        PermitUnavailableException unavailable(long startNanos, Throwable cause) {
            return new PermitUnavailableException(semaphore.name(), permits,
                    Duration.ofNanos(Math.max(0, System.nanoTime() - startNanos)), cause);
        }
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Plan plan = plan(invocation);
        return plan.async() ? invokeAsync(plan, invocation) : invokeBlocking(plan, invocation);
    }

    private static Object invokeBlocking(Plan plan, MethodInvocation invocation) throws Throwable {
        Permit permit = acquire(plan);
        try {
            return invocation.proceed();
        } catch (Throwable t) {
            plan.failed(t);
            throw t;
        } finally {
            permit.close();
        }
    }

    private static Permit acquire(Plan plan) {
        long start = System.nanoTime();
        try {
            return plan.timeout() == null ? plan.semaphore().acquire(plan.permits())
                    : plan.semaphore().acquire(plan.permits(), plan.timeout());
        } catch (TimeoutException e) {
            throw plan.unavailable(start, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the caller learns of the interrupt from the flag, as the contract says
            throw plan.unavailable(start, e);
        } catch (SemaphoreClosedException e) {
            throw plan.unavailable(start, e);
        }
    }

    /**
     * The method runs once the permits are granted, on the thread that grants them (the caller's, when they
     * are free); its stage's completion releases them, then completes the returned future.
     */
    private static CompletableFuture<Object> invokeAsync(Plan plan, MethodInvocation invocation) {
        long start = System.nanoTime();
        Semaphore semaphore = plan.semaphore();
        CompletableFuture<Permit> acquired = plan.timeout() == null ? semaphore.acquireAsync(plan.permits())
                : semaphore.acquireAsync(plan.permits(), plan.timeout());
        CompletableFuture<Object> result = new CompletableFuture<>();
        // The caller gave up (cancel, orTimeout) while the permits were awaited: withdraw the request. A grant
        // that races with it is given back by the acquire future itself, or below when result is found done.
        result.whenComplete((v, e) -> {
            if (!acquired.isDone()) {
                acquired.cancel(false);
            }
        });
        acquired.whenComplete((permit, failure) -> {
            if (failure != null) {
                result.completeExceptionally(asyncFailure(plan, start, failure));
                return;
            }
            if (result.isDone()) {
                permit.close();
                return;
            }
            Object returned;
            try {
                returned = invocation.proceed();
            } catch (Throwable t) {
                plan.failed(t);
                permit.close();
                result.completeExceptionally(t);
                return;
            }
            if (returned == null) {
                permit.close();
                result.completeExceptionally(new NullPointerException(ClassUtils.getQualifiedMethodName(plan.method())
                        + " returned null instead of a CompletionStage"));
                return;
            }
            ((CompletionStage<?>) returned).whenComplete((value, error) -> {
                if (error != null) {
                    plan.failed(error);
                }
                permit.close(); // first, so that whoever continues from the result finds the permits back
                if (error != null) {
                    result.completeExceptionally(unwrap(error));
                } else {
                    result.complete(value);
                }
            });
        });
        return result;
    }

    private static Throwable asyncFailure(Plan plan, long start, Throwable failure) {
        Throwable t = unwrap(failure);
        if (t instanceof TimeoutException || t instanceof SemaphoreClosedException) {
            return plan.unavailable(start, t);
        }
        return t; // a cancellation of ours (result is then done already), or the Redis being unreachable
    }

    private static Throwable unwrap(Throwable t) {
        Throwable u = t;
        while ((u instanceof CompletionException || u instanceof ExecutionException) && u.getCause() != null) {
            u = u.getCause();
        }
        return u;
    }

    private Plan plan(MethodInvocation invocation) {
        Method method = invocation.getMethod();
        Object target = invocation.getThis();
        Method specific = target == null ? method : AopUtils.getMostSpecificMethod(method, AopUtils.getTargetClass(target));
        Plan plan = plans.get(specific);
        if (plan != null) {
            return plan;
        }
        WithPermits annotation = AnnotatedElementUtils.findMergedAnnotation(specific, WithPermits.class);
        if (annotation == null) {
            annotation = AnnotatedElementUtils.findMergedAnnotation(method, WithPermits.class);
        }
        return plan(specific, annotation);
    }

    /**
     * Works out (once) what calls of {@code method} do, checking the annotation against the registry.
     *
     * @throws SemaConfigurationException if the annotation is wrong
     */
    Plan plan(Method method, WithPermits annotation) {
        Plan known = plans.get(method);
        if (known != null) {
            return known;
        }
        String name = resolve(annotation.value());
        SemaphoreRegistry semaphores = registry.getObject();
        Semaphore semaphore = semaphores.find(name).orElseThrow(() -> invalid(method, annotation, "value", name,
                "names no semaphore in the registry (" + (semaphores.all().isEmpty() ? "it has none"
                        : "it has " + semaphores.all().keySet()) + ")",
                "Configure sema.semaphores." + name + ".permits, or correct the name."));
        if (annotation.permits() < 0 || annotation.permits() > semaphore.maxPermits()) {
            throw invalid(method, annotation, "permits", String.valueOf(annotation.permits()), "must be between 0 and"
                    + " the semaphore's max-permits (" + semaphore.maxPermits() + ")", null);
        }
        Duration timeout = timeout(method, annotation);
        Class<?> returns = method.getReturnType();
        boolean async = CompletionStage.class.isAssignableFrom(returns);
        if (async && !returns.isAssignableFrom(CompletableFuture.class)) {
            throw invalid(method, annotation, "value", name, "the method returns " + returns.getName()
                    + ": an asynchronous @WithPermits method must be declared to return CompletionStage or"
                    + " CompletableFuture", null);
        }
        if (isPublisher(returns)) {
            throw invalid(method, annotation, "value", name, "the method returns a reactive " + returns.getName()
                    + ", whose work starts after the call returns, when the permits would already be released",
                    "Return a CompletionStage or CompletableFuture, or acquire the permits in the reactive chain.");
        }
        AdaptiveLimit adaptive = semaphores.adaptive(name).orElse(null);
        if (adaptive == null && annotation.droppedOn().length > 0) {
            LOG.log(System.Logger.Level.WARNING, () -> "@WithPermits(droppedOn = "
                    + Arrays.toString(annotation.droppedOn()) + ") on " + ClassUtils.getQualifiedMethodName(method)
                    + " has no effect: semaphore '" + name + "' has no adaptive limit (sema.semaphores." + name
                    + ".adaptive)");
        }
        Plan plan = new Plan(semaphore, annotation.permits(), timeout, annotation.droppedOn(), adaptive, async, method);
        Plan raced = plans.putIfAbsent(method, plan);
        return raced == null ? plan : raced;
    }

    private Duration timeout(Method method, WithPermits annotation) {
        String text = resolve(annotation.timeout()).trim();
        if (text.isEmpty()) {
            return null;
        }
        Duration timeout;
        try {
            timeout = DurationStyle.detectAndParse(text);
        } catch (IllegalArgumentException e) {
            throw invalid(method, annotation, "timeout", text, "is not a duration: \"\" waits as long as it takes, \"0\""
                    + " never waits, otherwise e.g. \"200ms\", \"2s\" or \"PT1S\"", null);
        }
        if (timeout.isNegative()) {
            throw invalid(method, annotation, "timeout", text, "must not be negative", null);
        }
        return timeout;
    }

    private String resolve(String value) {
        String resolved = beanFactory == null ? value : beanFactory.resolveEmbeddedValue(value);
        return resolved == null ? value : resolved;
    }

    private static boolean isPublisher(Class<?> type) {
        for (Class<?> c = type; c != null; c = c.getSuperclass()) {
            if (implementsPublisher(c)) {
                return true;
            }
        }
        return false;
    }

    private static boolean implementsPublisher(Class<?> c) {
        if (c.getName().equals(PUBLISHER)) {
            return true;
        }
        for (Class<?> i : c.getInterfaces()) {
            if (implementsPublisher(i)) {
                return true;
            }
        }
        return false;
    }

    static SemaConfigurationException invalid(Method method, WithPermits annotation, String attribute, String value,
            String reason, String action) {
        return new SemaConfigurationException(SemaConfigurationException.Kind.ANNOTATION, "@WithPermits(" + attribute
                + ") on " + ClassUtils.getQualifiedMethodName(method), value, null, reason,
                action == null ? "Correct the annotation." : action, null);
    }
}
