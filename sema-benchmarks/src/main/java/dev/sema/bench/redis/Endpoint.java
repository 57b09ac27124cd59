package dev.sema.bench.redis;

import dev.sema.testing.RedisServer;
import java.net.URI;

/**
 * The Redis a benchmark runs against: one it started ({@link RedisServer}, on a loopback port) or one it was
 * given ({@link RedisServer#givenUri()}: {@code redis://host:port}, no password, no TLS), shared then with
 * whatever else uses it.
 *
 * @param host the host
 * @param port the port
 * @param started whether the benchmark started it (else it was given, and is left as it was found, but for the
 *     statistics the benchmark resets)
 */
public record Endpoint(String host, int port, boolean started) {

    /** The server {@code server}, started here. */
    public static Endpoint of(RedisServer server) {
        return new Endpoint(server.host(), server.port(), true);
    }

    /** The server at {@code uri} ({@code redis://host:port}); nothing is started or stopped. */
    public static Endpoint given(String uri) {
        URI u = URI.create(uri);
        if (!"redis".equals(u.getScheme()) || u.getHost() == null) {
            throw new IllegalArgumentException("expected redis://host:port, got " + uri);
        }
        return new Endpoint(u.getHost(), u.getPort() < 0 ? 6379 : u.getPort(), false);
    }

    /** {@code redis://host:port}. */
    public String uri() {
        return "redis://" + host + ":" + port;
    }
}
