package dev.sema.grpc;

import io.grpc.ForwardingServerCallListener;
import io.grpc.Metadata;
import io.grpc.ServerCall;
import io.grpc.ServerCallHandler;
import io.grpc.ServerInterceptor;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Counts the calls between their start and their last event (onComplete or onCancel), and the most at once:
 * placed inside a limiting interceptor, it sees exactly the calls that hold a permit.
 */
final class InFlight implements ServerInterceptor {
    final AtomicInteger now = new AtomicInteger();
    final AtomicInteger max = new AtomicInteger();

    @Override
    public <ReqT, RespT> ServerCall.Listener<ReqT> interceptCall(ServerCall<ReqT, RespT> call, Metadata headers,
            ServerCallHandler<ReqT, RespT> next) {
        max.accumulateAndGet(now.incrementAndGet(), Math::max);
        ServerCall.Listener<ReqT> listener;
        try {
            listener = next.startCall(call, headers);
        } catch (RuntimeException e) {
            now.decrementAndGet();
            throw e;
        }
        return new ForwardingServerCallListener.SimpleForwardingServerCallListener<>(listener) {
            @Override
            public void onComplete() {
                now.decrementAndGet();
                super.onComplete();
            }

            @Override
            public void onCancel() {
                now.decrementAndGet();
                super.onCancel();
            }
        };
    }
}
