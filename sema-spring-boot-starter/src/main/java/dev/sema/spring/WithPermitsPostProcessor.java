package dev.sema.spring;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import org.springframework.aop.framework.autoproxy.AbstractBeanFactoryAwareAdvisingPostProcessor;
import org.springframework.aop.support.AopUtils;
import org.springframework.aop.support.DefaultPointcutAdvisor;
import org.springframework.aop.support.annotation.AnnotationMatchingPointcut;
import org.springframework.beans.factory.BeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;
import org.springframework.util.ReflectionUtils;

/**
 * Proxies every bean with a {@link WithPermits} method (on its class or an interface it implements), the way
 * Spring's method validation does: without an auto-proxy creator of its own, so it works whatever the
 * application's AOP setup, and ahead of the bean's other advice ({@code beforeExistingAdvisors}), so that
 * the permits are held before a transaction begins. Each bean's annotated methods are checked when it is
 * proxied: a mistake stops the application.
 */
@SuppressWarnings("serial") // Serializable through ProxyProcessorSupport; never serialized
final class WithPermitsPostProcessor extends AbstractBeanFactoryAwareAdvisingPostProcessor {
    private final ObjectProvider<SemaphoreRegistry> registry;
    private WithPermitsInterceptor interceptor;

    WithPermitsPostProcessor(ObjectProvider<SemaphoreRegistry> registry, boolean proxyTargetClass) {
        this.registry = registry;
        setProxyTargetClass(proxyTargetClass);
        setBeforeExistingAdvisors(true);
    }

    @Override
    public void setBeanFactory(BeanFactory beanFactory) {
        super.setBeanFactory(beanFactory);
        this.interceptor = new WithPermitsInterceptor(registry, this.beanFactory);
        this.advisor = new DefaultPointcutAdvisor(new AnnotationMatchingPointcut(null, WithPermits.class, true),
                interceptor);
    }

    @Override
    public Object postProcessAfterInitialization(Object bean, String beanName) {
        if (isEligible(bean, beanName)) {
            check(ClassUtils.getUserClass(AopUtils.getTargetClass(bean)));
        }
        return super.postProcessAfterInitialization(bean, beanName);
    }

    /** Resolves the plan of every annotated method now, so that a mistake surfaces at startup. */
    private void check(Class<?> type) {
        ReflectionUtils.doWithMethods(type, method -> {
            WithPermits annotation = AnnotatedElementUtils.findMergedAnnotation(method, WithPermits.class);
            if (annotation == null) {
                return;
            }
            int modifiers = method.getModifiers();
            if (Modifier.isPrivate(modifiers) || Modifier.isStatic(modifiers)
                    || (Modifier.isFinal(modifiers) && isProxyTargetClass())) {
                throw WithPermitsInterceptor.invalid(method, annotation, "value", annotation.value(),
                        "a " + (Modifier.isPrivate(modifiers) ? "private" : Modifier.isStatic(modifiers) ? "static"
                                : "final") + " method cannot be proxied, so its calls would not be limited",
                        "Make the method non-private, non-static and non-final, or remove @WithPermits.");
            }
            interceptor.plan(method, type, annotation);
        }, WithPermitsPostProcessor::candidate);
    }

    private static boolean candidate(Method method) {
        return !method.isBridge() && !method.isSynthetic() && method.getDeclaringClass() != Object.class;
    }
}
