/**
 * Sema for Kotlin coroutines: suspending acquires, {@code withPermit} and {@code mapWithPermits} on any
 * {@link dev.sema.Semaphore}, none of which blocks a thread while it waits.
 */
module dev.sema.kotlin {
    requires transitive dev.sema;
    requires transitive kotlin.stdlib;
    requires transitive kotlinx.coroutines.core;
    requires static reactor.blockhound; // optional: only for the integration below

    exports dev.sema.kotlin;

    provides reactor.blockhound.integration.BlockHoundIntegration with dev.sema.kotlin.SemaBlockHoundIntegration;
}
