package dev.sema.spring;

import dev.sema.AdaptiveLimit;
import dev.sema.KeyedSemaphore;
import dev.sema.Permit;
import dev.sema.Semaphore;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ConcurrentHashMap;
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
    /**
     * Whether {@code Mono} and {@code Flux} methods can be served: reactor-core and sema-reactor are both on the class
     * path. Only then is {@link ReactiveWithPermits} loaded.
     */
    private static final boolean REACTOR_PRESENT = ClassUtils.isPresent("reactor.core.publisher.Mono",
            WithPermitsInterceptor.class.getClassLoader()) && ClassUtils.isPresent("dev.sema.reactor.SemaReactor",
                    WithPermitsInterceptor.class.getClassLoader());

    private final ObjectProvider<SemaphoreRegistry> registry;
    private final ConfigurableBeanFactory beanFactory;
    /**
     * The plans by the bean's class, then the method: two beans of classes that inherit one annotated method
     * have a plan each, since the fallback is looked for in the bean's class.
     */
    private final ConcurrentHashMap<Class<?>, ConcurrentHashMap<Method, Plan>> plans = new ConcurrentHashMap<>();

    WithPermitsInterceptor(ObjectProvider<SemaphoreRegistry> registry, ConfigurableBeanFactory beanFactory) {
        this.registry = registry;
        this.beanFactory = beanFactory;
    }

    /**
     * What one annotated method does.
     *
     * @param target what a call acquires: the registry's semaphore or the view of its partition, found once; or the
     *        semaphore of the call's key in a keyed family
     * @param name the semaphore's name in the registry, to find its adaptive limit (which a Redis semaphore gets only
     *        once it is open)
     * @param registry the registry
     * @param permits how many permits a call holds
     * @param timeout how long a call waits for them; {@code null}: as long as it takes; zero: not at all (a
     *        {@code tryAcquire}, so that a refusal is {@code UNAVAILABLE}, never a timeout, and so never a drop for
     *        an adaptive limit)
     * @param droppedOn the failures that are drops
     * @param fallback what is called instead of throwing a refusal, or {@code null}
     * @param style how a call is made, by what the method returns
     * @param method the method, for messages
     */
    record Plan(Target target, String name, SemaphoreRegistry registry, long permits, Duration timeout,
            Class<? extends Throwable>[] droppedOn, Fallback fallback, Style style, Method method) {

        /**
         * The semaphore a call acquires.
         *
         * @throws IllegalArgumentException if the call has no key ({@link KeyExpression#evaluate})
         */
        Semaphore semaphore(MethodInvocation invocation) {
            return target.select(invocation);
        }

        void failed(Throwable failure) {
            if (droppedOn.length == 0) {
                return;
            }
            AdaptiveLimit adaptive = registry.adaptive(name).orElse(null);
            if (adaptive == null) {
                return;
            }
            Throwable t = Refusals.unwrap(failure);
            for (Class<? extends Throwable> type : droppedOn) {
                if (type.isInstance(t)) {
                    adaptive.dropped();
                    return;
                }
            }
        }

    }

    /**
     * How calls of a method are made, by what it returns, chosen once when its plan is made: {@link #BLOCKING},
     * {@link #ASYNC} ({@code CompletionStage}), or {@link ReactiveWithPermits} ({@code Mono}, {@code Flux}).
     */
    interface Style {
        /** Makes the call: acquires, calls, releases, as this kind of method needs. */
        Object invoke(Plan plan, MethodInvocation invocation) throws Throwable;

        /**
         * Why {@code fallback} does not fit {@code annotated} (its return type), or {@code null} when it does.
         *
         * @param targetClass the bean's class, to resolve generics
         */
        String misfit(Method annotated, Method fallback, Class<?> targetClass);
    }

    /** A method that returns its result: it runs holding the permits, on the calling thread. */
    static final Style BLOCKING = new Style() {
        @Override
        public Object invoke(Plan plan, MethodInvocation invocation) throws Throwable {
            return invokeBlocking(plan, invocation);
        }

        @Override
        public String misfit(Method annotated, Method fallback, Class<?> targetClass) {
            return Fallback.misfitSync(annotated, fallback, targetClass);
        }
    };

    /** A method that returns a {@code CompletionStage}: the permits are held until it completes. */
    static final Style ASYNC = new Style() {
        @Override
        public Object invoke(Plan plan, MethodInvocation invocation) {
            return invokeAsync(plan, invocation);
        }

        @Override
        public String misfit(Method annotated, Method fallback, Class<?> targetClass) {
            return Fallback.misfitAsync(annotated, fallback, targetClass);
        }
    };

    /** What a call acquires: one semaphore for every call, or the semaphore of each call's key. */
    interface Target {
        Semaphore select(MethodInvocation invocation);
    }

    /** The semaphore (or partition view) of every call. */
    private record Fixed(Semaphore semaphore) implements Target {
        @Override
        public Semaphore select(MethodInvocation invocation) {
            return semaphore;
        }
    }

    /** The semaphore of the call's key in a family. */
    private record ByKey(KeyedSemaphore<Object> family, KeyExpression key) implements Target {
        @Override
        public Semaphore select(MethodInvocation invocation) {
            Object k = key.evaluate(invocation.getThis(), invocation.getArguments());
            try {
                return family.get(k);
            } catch (IllegalArgumentException refused) {
                throw key.refused(k, refused);
            }
        }
    }

    @Override
    public Object invoke(MethodInvocation invocation) throws Throwable {
        Plan plan = plan(invocation);
        return plan.style().invoke(plan, invocation);
    }

    private static Object invokeBlocking(Plan plan, MethodInvocation invocation) throws Throwable {
        Permit permit;
        try {
            permit = Refusals.acquire(plan.semaphore(invocation), plan.permits(), plan.timeout());
        } catch (PermitUnavailableException refusal) {
            // An interrupted caller is asked to stop, not to do something else: no fallback then.
            if (plan.fallback() == null || refusal.getCause() instanceof InterruptedException) {
                throw refusal;
            }
            return plan.fallback().call(invocation.getThis(), invocation.getArguments(), refusal);
        }
        try {
            return invocation.proceed();
        } catch (Throwable t) {
            plan.failed(t);
            throw t;
        } finally {
            permit.close();
        }
    }

    /**
     * The method runs once the permits are granted, on the thread that grants them (the caller's, when they
     * are free); its stage's completion releases them, then completes the returned future.
     */
    private static CompletableFuture<Object> invokeAsync(Plan plan, MethodInvocation invocation) {
        long start = System.nanoTime();
        Thread caller = Thread.currentThread();
        Semaphore semaphore;
        try {
            semaphore = plan.semaphore(invocation);
        } catch (IllegalArgumentException noKey) {
            return CompletableFuture.failedFuture(noKey);
        }
        CompletableFuture<Permit> acquired = Refusals.acquireAsync(semaphore, plan.permits(), plan.timeout());
        CompletableFuture<Object> result = new CompletableFuture<>();
        // The caller gave up (cancel, orTimeout) while the permits were awaited: withdraw the request. A grant
        // that races with it is given back by the semaphore's future itself, or below when result is found done.
        result.whenComplete((v, e) -> {
            if (!acquired.isDone()) {
                acquired.cancel(false);
            }
        });
        acquired.whenComplete((permit, failure) -> {
            if (failure != null) {
                refusedAsync(plan, invocation, Refusals.of(semaphore.name(), plan.permits(), start, failure),
                        failure, result, caller);
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
                complete(result, value, error);
            });
        });
        return result;
    }

    /**
     * No permits for an asynchronous call: the fallback's result, or the refusal, completes {@code result}. A
     * fallback runs on the caller's thread when the refusal came at once, else on a virtual thread of its own: the
     * thread that learned of the refusal may be the library's timer, which a fallback that reads a cache or a
     * database must not hold up.
     *
     * @param refusal the refusal, or {@code null} when {@code failure} is not one (then it fails {@code result})
     */
    private static void refusedAsync(Plan plan, MethodInvocation invocation, PermitUnavailableException refusal,
            Throwable failure, CompletableFuture<Object> result, Thread caller) {
        if (refusal == null || result.isDone()) {
            result.completeExceptionally(Refusals.unwrap(failure)); // a cancellation of ours (result is done already)
            return;
        }
        if (plan.fallback() == null) {
            result.completeExceptionally(refusal);
        } else if (Thread.currentThread() == caller) {
            fallBack(plan, invocation, refusal, result);
        } else {
            Thread.ofVirtual().name("sema-fallback").start(() -> fallBack(plan, invocation, refusal, result));
        }
    }

    private static void fallBack(Plan plan, MethodInvocation invocation, PermitUnavailableException refusal,
            CompletableFuture<Object> result) {
        Object returned;
        try {
            returned = plan.fallback().call(invocation.getThis(), invocation.getArguments(), refusal);
        } catch (Throwable t) {
            result.completeExceptionally(t);
            return;
        }
        if (!plan.fallback().returnsDeferred()) {
            result.complete(returned);
        } else if (returned == null) {
            result.completeExceptionally(new NullPointerException("fallback " + Fallback.describe(plan.fallback()
                    .method()) + " returned null instead of a CompletionStage"));
        } else {
            ((CompletionStage<?>) returned).whenComplete((value, error) -> complete(result, value, error));
        }
    }

    private static void complete(CompletableFuture<Object> result, Object value, Throwable error) {
        if (error != null) {
            result.completeExceptionally(Refusals.unwrap(error));
        } else {
            result.complete(value);
        }
    }

    private Plan plan(MethodInvocation invocation) {
        Method method = invocation.getMethod();
        Object target = invocation.getThis();
        Class<?> targetClass = target == null ? method.getDeclaringClass()
                : ClassUtils.getUserClass(AopUtils.getTargetClass(target));
        Method specific = target == null ? method : AopUtils.getMostSpecificMethod(method, targetClass);
        ConcurrentHashMap<Method, Plan> ofClass = plans.get(targetClass);
        Plan plan = ofClass == null ? null : ofClass.get(specific);
        if (plan != null) {
            return plan;
        }
        WithPermits annotation = AnnotatedElementUtils.findMergedAnnotation(specific, WithPermits.class);
        if (annotation == null) {
            annotation = AnnotatedElementUtils.findMergedAnnotation(method, WithPermits.class);
        }
        return plan(specific, targetClass, annotation);
    }

    /**
     * Works out (once) what calls of {@code method} do, checking the annotation against the registry.
     *
     * @param method the annotated method
     * @param targetClass the bean's class, where the fallback is looked for
     * @param annotation its annotation
     * @throws SemaConfigurationException if the annotation is wrong
     */
    Plan plan(Method method, Class<?> targetClass, WithPermits annotation) {
        ConcurrentHashMap<Method, Plan> ofClass = plans.computeIfAbsent(targetClass, c -> new ConcurrentHashMap<>());
        Plan known = ofClass.get(method);
        if (known != null) {
            return known;
        }
        String name = resolve(annotation.value());
        SemaphoreRegistry semaphores = registry.getObject();
        String keyText = resolve(annotation.key()).trim();
        KeyedSemaphore<Object> family = semaphores.allKeyed().get(name);
        Semaphore parent = family != null ? null : semaphores.find(name).orElseThrow(() -> invalid(method,
                annotation, "value", name, "names no semaphore in the registry (" + (semaphores.all().isEmpty()
                        ? "it has none" : "it has " + semaphores.all().keySet()) + (semaphores.allKeyed().isEmpty()
                                ? "" : ", and keyed families " + semaphores.allKeyed().keySet()) + ")",
                "Configure sema.semaphores." + name + ".permits, or correct the name."));
        Target target;
        if (family != null) {
            target = byKey(method, annotation, name, family, keyText);
        } else {
            if (!keyText.isEmpty()) {
                throw invalid(method, annotation, "key", keyText, "'" + name + "' is a semaphore, not a keyed family:"
                        + " a key applies to a family of sema.keyed", "Remove the key, or name a keyed family"
                                + (semaphores.allKeyed().isEmpty() ? " (sema.keyed configures none)"
                                        : " (" + semaphores.allKeyed().keySet() + ")") + ".");
            }
            Semaphore semaphore = partition(method, annotation, name, parent);
            if (annotation.permits() < 0 || annotation.permits() > semaphore.maxPermits()) {
                throw invalid(method, annotation, "permits", String.valueOf(annotation.permits()), "must be between 0"
                        + " and the semaphore's max-permits (" + semaphore.maxPermits() + ")", null);
            }
            target = new Fixed(semaphore);
        }
        Duration timeout = timeout(method, annotation);
        Style style = style(method, annotation, name);
        // A Redis semaphore gets its adaptive limit once it is open in Redis, which may be after startup.
        if (annotation.droppedOn().length > 0 && semaphores.adaptive(name).isEmpty()
                && (parent == null || !SemaphoreState.isRedis(parent))) {
            LOG.log(System.Logger.Level.WARNING, () -> "@WithPermits(droppedOn = "
                    + Arrays.toString(annotation.droppedOn()) + ") on " + ClassUtils.getQualifiedMethodName(method)
                    + " has no effect: semaphore '" + name + "' has no adaptive limit (sema.semaphores." + name
                    + ".adaptive)");
        }
        String fallbackName = resolve(annotation.fallback()).trim();
        Fallback fallback = fallbackName.isEmpty() ? null
                : Fallback.resolve(method, targetClass, fallbackName, style, annotation);
        Plan plan = new Plan(target, name, semaphores, annotation.permits(), timeout, annotation.droppedOn(),
                fallback, style, method);
        Plan raced = ofClass.putIfAbsent(method, plan);
        return raced == null ? plan : raced;
    }

    /**
     * How calls of {@code method} are made, by its declared return type: a {@code CompletionStage} (declared as
     * {@code CompletionStage} or {@code CompletableFuture}), a {@code Mono} or {@code Flux} (with reactor-core and
     * sema-reactor on the class path), or anything else but another reactive {@code Publisher}.
     */
    private static Style style(Method method, WithPermits annotation, String name) {
        Class<?> returns = method.getReturnType();
        if (CompletionStage.class.isAssignableFrom(returns)) {
            if (!returns.isAssignableFrom(CompletableFuture.class)) {
                throw invalid(method, annotation, "value", name, "the method returns " + returns.getName()
                        + ": an asynchronous @WithPermits method must be declared to return CompletionStage or"
                        + " CompletableFuture", null);
            }
            return ASYNC;
        }
        if (!isPublisher(returns)) {
            return BLOCKING;
        }
        Style reactive = REACTOR_PRESENT ? ReactiveWithPermits.of(returns) : null;
        if (reactive != null) {
            return reactive;
        }
        throw invalid(method, annotation, "value", name, "the method returns a reactive " + returns.getName()
                + (REACTOR_PRESENT ? ", and a reactive @WithPermits method must be declared to return"
                        + " reactor.core.publisher.Mono or Flux" : ", and @WithPermits holds permits for a reactive"
                                + " method (Mono or Flux) only with reactor-core and dev.sema:sema-reactor on the"
                                + " class path"), REACTOR_PRESENT ? "Declare the method to return Mono or Flux (say"
                                        + " Flux.from(publisher)), or acquire the permits in the reactive chain"
                                        + " (SemaReactor.withPermits)." : "Add the dependency dev.sema:sema-reactor,"
                                                + " or return a CompletionStage.");
    }

    /** The key's semaphore in {@code family}, with the key's expression parsed now. */
    private Target byKey(Method method, WithPermits annotation, String name, KeyedSemaphore<Object> family,
            String keyText) {
        if (keyText.isEmpty()) {
            throw invalid(method, annotation, "key", "", "'" + name + "' is a keyed family: each call needs a key,"
                    + " a SpEL expression over the method's parameters", "Add key = \"#tenant\" (say) to the"
                            + " annotation, naming the parameter that holds the key.");
        }
        String partition = resolve(annotation.partition()).trim();
        if (!partition.isEmpty()) {
            throw invalid(method, annotation, "partition", partition, "'" + name + "' is a keyed family, which has"
                    + " no partitions", "Remove the partition; sema.keyed." + name + ".parent may name a partition"
                            + " (api/batch) that every key's permits also hold.");
        }
        if (annotation.permits() < 0) {
            throw invalid(method, annotation, "permits", String.valueOf(annotation.permits()), "must not be negative",
                    null);
        }
        KeyExpression key;
        try {
            key = KeyExpression.parse(keyText, method, beanFactory);
        } catch (org.springframework.expression.ParseException e) {
            throw invalid(method, annotation, "key", keyText, "is not a SpEL expression: " + e.getMessage(),
                    "Write the key as Spring's cache annotations do, e.g. \"#tenant.id\" or \"#p0\".");
        }
        return new ByKey(family, key);
    }

    /** The view of the annotation's partition of {@code semaphore}, or {@code semaphore} itself when it names none. */
    private Semaphore partition(Method method, WithPermits annotation, String name, Semaphore semaphore) {
        String partition = resolve(annotation.partition()).trim();
        if (partition.isEmpty()) {
            return semaphore;
        }
        List<String> known = semaphore.partitionNames();
        if (known.isEmpty()) {
            throw invalid(method, annotation, "partition", partition, "semaphore '" + name + "' has no partitions",
                    "Declare " + Settings.semaphore(name) + ".partitions, or remove the partition.");
        }
        if (!known.contains(partition)) {
            throw invalid(method, annotation, "partition", partition, "names no partition of semaphore '" + name
                    + "' (its partitions are " + known + ")", "Use one of " + known + ", or declare it under "
                    + Settings.semaphore(name) + ".partitions.");
        }
        return semaphore.partition(partition);
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

    /** Whether {@code type} is a reactive {@code Publisher}, found by name: Reactive Streams may be absent. */
    static boolean isPublisher(Class<?> type) {
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
