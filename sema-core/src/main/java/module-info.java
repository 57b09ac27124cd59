/**
 * Sema: weighted, fair, cancellable semaphores whose permits are objects.
 *
 * <p>Start with {@link dev.sema.Semaphore#create(long)} or {@link dev.sema.Semaphore#builder()}.
 */
module dev.sema {
    exports dev.sema;
}
