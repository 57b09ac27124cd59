/**
 * Project Reactor operators for Sema semaphores: {@link dev.sema.reactor.SemaReactor}.
 */
module dev.sema.reactor {
    requires transitive dev.sema;
    requires transitive reactor.core;
    requires transitive org.reactivestreams;
    requires static reactor.blockhound; // only SemaBlockHoundIntegration, loaded by BlockHound itself

    exports dev.sema.reactor;

    provides reactor.blockhound.integration.BlockHoundIntegration with dev.sema.reactor.SemaBlockHoundIntegration;
}
