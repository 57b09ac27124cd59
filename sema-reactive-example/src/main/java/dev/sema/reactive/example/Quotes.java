package dev.sema.reactive.example;

import io.grpc.MethodDescriptor;
import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;

/**
 * The gRPC service {@code example.Quotes} as its server ({@link QuoteGrpcServer}) and its clients (the demo's reactive
 * part, the tests) call it: written by hand, without protoc, with UTF-8 strings as messages. It needs nothing but
 * grpc-api, so a client can use it without the application's Spring Boot.
 */
public final class Quotes {
    /** The service's name. */
    public static final String SERVICE = "example.Quotes";
    /** A message: a UTF-8 string. */
    public static final MethodDescriptor.Marshaller<String> UTF8 = new MethodDescriptor.Marshaller<>() {
        @Override
        public InputStream stream(String value) {
            return new ByteArrayInputStream(value.getBytes(StandardCharsets.UTF_8));
        }

        @Override
        public String parse(InputStream stream) {
            try {
                return new String(stream.readAllBytes(), StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    };
    /** The quote of the symbol sent, after {@code example.quote-time}. */
    public static final MethodDescriptor<String, String> GET = unary("Get");
    /** Sleeps a millisecond on the event loop, on purpose, and answers the thread's name. */
    public static final MethodDescriptor<String, String> BLOCK = unary("Block");

    private Quotes() {
    }

    private static MethodDescriptor<String, String> unary(String name) {
        return MethodDescriptor.<String, String>newBuilder().setType(MethodDescriptor.MethodType.UNARY)
                .setFullMethodName(MethodDescriptor.generateFullMethodName(SERVICE, name))
                .setRequestMarshaller(UTF8).setResponseMarshaller(UTF8).build();
    }
}
