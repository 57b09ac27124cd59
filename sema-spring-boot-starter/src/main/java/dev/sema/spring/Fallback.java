package dev.sema.spring;

import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletionStage;
import java.util.stream.Collectors;
import org.springframework.core.ResolvableType;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * The {@link WithPermits#fallback()} of one method: found and checked once, when the method's plan is made, and
 * called with the method's arguments (and the refusal, when it takes one) instead of throwing
 * {@link PermitUnavailableException}.
 *
 * <p>It is a method of the same class (or a superclass), of any visibility, static or not, named by the
 * annotation, whose parameters are the annotated method's, optionally followed by one whose type
 * {@code PermitUnavailableException} is assignable to (that form wins when both exist). Its return type fits the
 * annotated method's: assignable to it for a synchronous method (generics included); for an asynchronous one a
 * {@code CompletionStage} of a value assignable to the stage's, or such a value itself, which completes the
 * returned future (a {@code void} one completes it with {@code null} when the stage is of {@code Void}); for a
 * reactive one as {@link ReactiveWithPermits} says (a {@code Mono} method's: a {@code Mono} of its value, or the value
 * itself; a {@code Flux} method's: a {@code Flux} or {@code Mono} of its values). Each kind of method checks the fit
 * ({@link WithPermitsInterceptor.Style#misfit}).
 *
 * @param method the fallback method
 * @param takesRefusal whether it takes the {@code PermitUnavailableException} as its last argument
 * @param returnsDeferred whether it returns a {@code CompletionStage} or a reactive {@code Publisher} of the result,
 *        rather than the result itself
 */
record Fallback(Method method, boolean takesRefusal, boolean returnsDeferred) {

    /**
     * Finds and checks the fallback {@code name} of {@code annotated}.
     *
     * @param annotated the {@code @WithPermits} method
     * @param targetClass the bean's class
     * @param name the fallback's name
     * @param style how {@code annotated} is called, which says what fits
     * @param annotation the annotation, for messages
     * @throws SemaConfigurationException if there is no such method, or it does not fit
     */
    static Fallback resolve(Method annotated, Class<?> targetClass, String name, WithPermitsInterceptor.Style style,
            WithPermits annotation) {
        Class<?>[] parameters = annotated.getParameterTypes();
        Method plain = null;
        Method withRefusal = null;
        List<Method> named = new ArrayList<>();
        for (Method m : ReflectionUtils.getUniqueDeclaredMethods(targetClass, m -> !m.isBridge() && !m.isSynthetic())) {
            if (!m.getName().equals(name)) {
                continue;
            }
            named.add(m);
            Class<?>[] p = m.getParameterTypes();
            if (Arrays.equals(p, parameters)) {
                plain = plain == null ? m : plain;
            } else if (p.length == parameters.length + 1 && Arrays.equals(p, 0, parameters.length, parameters, 0,
                    parameters.length) && p[parameters.length].isAssignableFrom(PermitUnavailableException.class)) {
                withRefusal = withRefusal == null ? m : withRefusal;
            }
        }
        String wanted = ClassUtils.getShortName(targetClass) + "." + name + "(" + names(parameters) + ") or "
                + name + "(" + names(parameters) + (parameters.length == 0 ? "" : ", ")
                + "PermitUnavailableException)";
        if (plain == null && withRefusal == null) {
            throw WithPermitsInterceptor.invalid(annotated, annotation, "fallback", name, "names no method that fits:"
                    + " the fallback must be " + wanted + (named.isEmpty() ? ", and " + ClassUtils.getShortName(
                    targetClass) + " has no method named '" + name + "'" : ", not " + named.stream()
                    .map(Fallback::describe).collect(Collectors.joining(", "))),
                    "Declare the fallback with the parameters of " + describe(annotated) + ", or correct the name.");
        }
        Method chosen = withRefusal != null ? withRefusal : plain;
        Class<?> returns = chosen.getReturnType();
        boolean returnsDeferred = CompletionStage.class.isAssignableFrom(returns)
                || WithPermitsInterceptor.isPublisher(returns);
        String misfit = style.misfit(annotated, chosen, targetClass);
        if (misfit != null) {
            throw WithPermitsInterceptor.invalid(annotated, annotation, "fallback", name, "the fallback "
                    + describe(chosen) + " " + misfit, "Make the fallback return what " + describe(annotated)
                    + " returns.");
        }
        ReflectionUtils.makeAccessible(chosen);
        return new Fallback(chosen, withRefusal != null, returnsDeferred);
    }

    /** Why a synchronous method's fallback does not fit, or {@code null}. */
    static String misfitSync(Method annotated, Method fallback, Class<?> targetClass) {
        Class<?> wanted = annotated.getReturnType();
        Class<?> given = fallback.getReturnType();
        if (wanted == void.class) {
            return null; // whatever it returns is dropped, as the method's own result would be
        }
        if (given == void.class) {
            return "returns void, where " + describe(annotated) + " returns " + annotated.getGenericReturnType()
                    .getTypeName();
        }
        boolean fits = wanted.isPrimitive() || given.isPrimitive() ? ClassUtils.isAssignable(wanted, given)
                : ResolvableType.forMethodReturnType(annotated, targetClass).isAssignableFrom(
                        ResolvableType.forMethodReturnType(fallback, targetClass));
        return fits ? null : "returns " + fallback.getGenericReturnType().getTypeName() + ", which is not a "
                + annotated.getGenericReturnType().getTypeName();
    }

    /** Why an asynchronous method's fallback does not fit, or {@code null}. */
    static String misfitAsync(Method annotated, Method fallback, Class<?> targetClass) {
        boolean returnsStage = CompletionStage.class.isAssignableFrom(fallback.getReturnType());
        ResolvableType value = ResolvableType.forMethodReturnType(annotated, targetClass).as(CompletionStage.class)
                .getGeneric(0);
        Class<?> given = fallback.getReturnType();
        if (given == void.class) {
            return value.resolve(Object.class) == Void.class ? null : "returns void, where the stage of "
                    + describe(annotated) + " is of " + value;
        }
        ResolvableType givenValue = returnsStage
                ? ResolvableType.forMethodReturnType(fallback, targetClass).as(CompletionStage.class).getGeneric(0)
                : returnedValue(fallback, targetClass);
        return valueMisfit(value, givenValue, fallback, "the stage of " + describe(annotated) + " completes with");
    }

    /** What {@code fallback} returns, as a value (a primitive boxed), resolved in {@code targetClass}. */
    static ResolvableType returnedValue(Method fallback, Class<?> targetClass) {
        Class<?> given = fallback.getReturnType();
        return given.isPrimitive() ? ResolvableType.forClass(ClassUtils.resolvePrimitiveIfNecessary(given))
                : ResolvableType.forMethodReturnType(fallback, targetClass);
    }

    /**
     * Why {@code fallback}, which gives values of {@code given}, does not fit where values of {@code wanted} are due,
     * or {@code null} when it does.
     *
     * @param what what the values are, for the message ("the stage of Quotes.quote(String) completes with")
     */
    static String valueMisfit(ResolvableType wanted, ResolvableType given, Method fallback, String what) {
        return wanted.isAssignableFrom(given) ? null : "returns " + fallback.getGenericReturnType().getTypeName()
                + ", whose value is not a " + wanted + " (what " + what + ")";
    }

    /**
     * Calls the fallback for {@code refusal}.
     *
     * @param target the bean (ignored for a static fallback)
     * @param arguments the annotated method's arguments
     * @return what the fallback returned
     * @throws Throwable what the fallback threw
     */
    Object call(Object target, Object[] arguments, PermitUnavailableException refusal) throws Throwable {
        Object[] args = arguments;
        if (takesRefusal) {
            args = Arrays.copyOf(arguments, arguments.length + 1);
            args[arguments.length] = refusal;
        }
        try {
            return method.invoke(Modifier.isStatic(method.getModifiers()) ? null : target, args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    private static String names(Class<?>[] types) {
        return Arrays.stream(types).map(Class::getSimpleName).collect(Collectors.joining(", "));
    }

    static String describe(Method m) {
        return ClassUtils.getShortName(m.getDeclaringClass()) + "." + m.getName() + "(" + names(m.getParameterTypes())
                + ")";
    }
}
