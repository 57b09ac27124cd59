/**
 * Sema: weighted, fair, cancellable semaphores whose permits are objects.
 *
 * <p>Start with {@link dev.sema.Semaphore#create(long)} or {@link dev.sema.Semaphore#builder()}.
 */
@SuppressWarnings("module") // dev.sema.redis, named in a qualified export, is built after this module
module dev.sema {
    requires jdk.jfr; // the dev.sema.* flight recorder events

    exports dev.sema;
    // The rules both engines keep alike (checks, messages, timeouts, the withdraw-first future): for the
    // Redis engine only, not an API.
    exports dev.sema.internal to dev.sema.redis;
}
