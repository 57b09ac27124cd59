/**
 * gRPC interceptors that limit calls with Sema semaphores, never blocking a thread while a call waits:
 * {@link dev.sema.grpc.SemaServerInterceptor} and {@link dev.sema.grpc.SemaClientInterceptor}.
 */
module dev.sema.grpc {
    requires transitive dev.sema;
    requires transitive io.grpc;

    exports dev.sema.grpc;
}
