package dev.sema.spring;

import java.lang.reflect.Method;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.context.expression.BeanFactoryResolver;
import org.springframework.context.expression.MethodBasedEvaluationContext;
import org.springframework.core.DefaultParameterNameDiscoverer;
import org.springframework.core.ParameterNameDiscoverer;
import org.springframework.expression.EvaluationException;
import org.springframework.expression.Expression;
import org.springframework.expression.ParseException;
import org.springframework.expression.spel.standard.SpelExpressionParser;
import org.springframework.util.ClassUtils;

/**
 * The {@link WithPermits#key()} of one method: parsed once, evaluated per call over the call's arguments as Spring's
 * cache annotations evaluate their {@code key} ({@link MethodBasedEvaluationContext}: the parameters by name, and as
 * {@code #p0}/{@code #a0}; {@code #root.method}, {@code #root.target}, {@code #root.args}; beans as {@code @name}).
 * Thread-safe: a SpEL {@link Expression} may be evaluated concurrently, and each call has its own context.
 */
final class KeyExpression {
    private static final SpelExpressionParser PARSER = new SpelExpressionParser();
    private static final ParameterNameDiscoverer NAMES = new DefaultParameterNameDiscoverer();

    private final String text;
    private final Expression expression;
    private final Method method;
    private final BeanFactoryResolver beans;

    private KeyExpression(String text, Expression expression, Method method, BeanFactory beanFactory) {
        this.text = text;
        this.expression = expression;
        this.method = method;
        this.beans = beanFactory == null ? null : new BeanFactoryResolver(beanFactory);
    }

    /**
     * Parses {@code text}.
     *
     * @throws ParseException if it does not parse
     */
    static KeyExpression parse(String text, Method method, BeanFactory beanFactory) {
        return new KeyExpression(text, PARSER.parseExpression(text), method, beanFactory);
    }

    /**
     * The key of a call.
     *
     * @throws IllegalArgumentException if the key is {@code null} or cannot be evaluated: never a shared key
     */
    Object evaluate(Object target, Object[] args) {
        MethodBasedEvaluationContext context = new MethodBasedEvaluationContext(new Root(method, args, target), method,
                args, NAMES);
        if (beans != null) {
            context.setBeanResolver(beans);
        }
        Object key;
        try {
            key = expression.getValue(context);
        } catch (EvaluationException e) {
            throw new IllegalArgumentException("@WithPermits(key = \"" + text + "\") on "
                    + ClassUtils.getQualifiedMethodName(method) + " could not be evaluated: " + e.getMessage(), e);
        }
        if (key == null) {
            throw new IllegalArgumentException("@WithPermits(key = \"" + text + "\") on "
                    + ClassUtils.getQualifiedMethodName(method) + " gave null: a call needs a key (the call was not"
                    + " made)");
        }
        return key;
    }

    /**
     * The failure of a call whose key {@code key} the family refused ({@code refusal}; on Redis, a key that is empty or
     * has a brace): the annotation, the method and the key, with the family's reason.
     */
    IllegalArgumentException refused(Object key, IllegalArgumentException refusal) {
        return new IllegalArgumentException("@WithPermits(key = \"" + text + "\") on "
                + ClassUtils.getQualifiedMethodName(method) + " gave the key '" + key + "', which the family refuses"
                + " (the call was not made): " + refusal.getMessage(), refusal);
    }

    /**
     * {@code #root}: the method, the bean and the arguments, as in Spring's cache expressions.
     *
     * @param method the annotated method
     * @param args the call's arguments
     * @param target the bean
     */
    record Root(Method method, Object[] args, Object target) {
        /** @return the method, as {@code #root.method} */
        public Method getMethod() {
            return method;
        }

        /** @return the method's name, as {@code #root.methodName} */
        public String getMethodName() {
            return method.getName();
        }

        /** @return the arguments, as {@code #root.args} */
        public Object[] getArgs() {
            return args;
        }

        /** @return the bean, as {@code #root.target} */
        public Object getTarget() {
            return target;
        }
    }

    @Override
    public String toString() {
        return text;
    }
}
