/**
 * gRPC interceptors that limit calls with Sema semaphores, never blocking a thread while a call waits:
 * {@link dev.sema.grpc.SemaServerInterceptor} and {@link dev.sema.grpc.SemaClientInterceptor}.
 */
module dev.sema.grpc {
    requires transitive dev.sema;
    requires transitive io.grpc;
    requires static reactor.blockhound; // only SemaBlockHoundIntegration, loaded by BlockHound itself

    exports dev.sema.grpc;

    // in a package of its own, not exported: only BlockHound (ServiceLoader) instantiates it
    provides reactor.blockhound.integration.BlockHoundIntegration
            with dev.sema.grpc.blockhound.SemaBlockHoundIntegration;
}
