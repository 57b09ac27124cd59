/**
 * Sema: weighted, fair, cancellable semaphores whose permits are objects.
 *
 * <p>Start with {@link dev.sema.Semaphore#create(long)} or {@link dev.sema.Semaphore#builder()}.
 */
@SuppressWarnings("module") // the modules named in the qualified export are built after this one
module dev.sema {
    requires jdk.jfr; // the dev.sema.* flight recorder events

    exports dev.sema;
    // The rules both engines keep alike (checks, messages, timeouts, the withdraw-first future, the
    // listeners), and the counts read together for metrics and the Spring Boot actuator endpoint: for Sema's
    // own modules only, not an API (dev.sema.spring is the starter's automatic module name); the engine's lock
    // sections for the BlockHound integrations of the non-blocking modules.
    exports dev.sema.internal to dev.sema.redis, dev.sema.micrometer, dev.sema.spring, dev.sema.reactor,
            dev.sema.kotlin, dev.sema.grpc;
}
