package dev.sema.bench.redis;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * A minimal blocking RESP2 client on a plain socket, for the observer's own commands (statistics, MONITOR,
 * probes): it depends on neither client under test, and it counts every command it sends, under the name
 * {@code INFO commandstats} uses, so that they can be taken out of the statistics. Not thread-safe.
 */
final class RawRedis implements AutoCloseable {
    /** Commands that {@code INFO commandstats} reports per subcommand ({@code config|resetstat}). */
    private static final Set<String> CONTAINERS = Set.of("acl", "client", "cluster", "command", "config", "debug",
            "function", "latency", "memory", "module", "object", "pubsub", "script", "slowlog", "xinfo");

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final Map<String, Long> sent = new TreeMap<>();

    private RawRedis(Socket socket) throws IOException {
        this.socket = socket;
        this.in = new BufferedInputStream(socket.getInputStream(), 1 << 16);
        this.out = new BufferedOutputStream(socket.getOutputStream(), 1 << 12);
    }

    static RawRedis connect(String host, int port) throws IOException {
        Socket s = new Socket();
        try {
            s.connect(new InetSocketAddress(host, port), 2_000);
            s.setTcpNoDelay(true);
            s.setSoTimeout(30_000);
            return new RawRedis(s);
        } catch (IOException e) {
            s.close();
            throw e;
        }
    }

    /** An error reply. */
    static final class ErrorReply extends IOException {
        private static final long serialVersionUID = 1L;

        ErrorReply(String message) {
            super(message);
        }
    }

    /**
     * Sends one command and reads its reply: a {@code String} (simple or bulk), a {@code Long}, a
     * {@code List<Object>} or {@code null}.
     */
    Object call(String... args) throws IOException {
        send(args);
        return read();
    }

    /** Sends one command without reading the reply (for MONITOR). */
    void send(String... args) throws IOException {
        String name = args[0].toLowerCase(java.util.Locale.ROOT);
        if (CONTAINERS.contains(name) && args.length > 1) {
            name = name + "|" + args[1].toLowerCase(java.util.Locale.ROOT);
        }
        sent.merge(name, 1L, Long::sum);
        out.write(("*" + args.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String a : args) {
            byte[] b = a.getBytes(StandardCharsets.UTF_8);
            out.write(("$" + b.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            out.write(b);
            out.write('\r');
            out.write('\n');
        }
        out.flush();
    }

    /** A copy of the counts of the commands sent so far, by {@code commandstats} name. */
    Map<String, Long> sent() {
        return new TreeMap<>(sent);
    }

    /** Reads one reply. */
    Object read() throws IOException {
        int type = in.read();
        if (type < 0) {
            throw new IOException("connection closed by Redis");
        }
        String line = line();
        switch (type) {
            case '+':
                return line;
            case '-':
                throw new ErrorReply(line);
            case ':':
                return Long.parseLong(line);
            case '$': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                byte[] b = in.readNBytes(n + 2);
                if (b.length != n + 2) {
                    throw new IOException("connection closed by Redis");
                }
                return new String(b, 0, n, StandardCharsets.UTF_8);
            }
            case '*': {
                int n = Integer.parseInt(line);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add(read());
                }
                return items;
            }
            default:
                throw new IOException("unexpected RESP type '" + (char) type + "'");
        }
    }

    private String line() throws IOException {
        StringBuilder sb = new StringBuilder();
        for (;;) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("connection closed by Redis");
            }
            if (c == '\r') {
                int lf = in.read();
                if (lf != '\n') {
                    throw new IOException("malformed reply line");
                }
                return sb.toString();
            }
            sb.append((char) c);
        }
    }

    /** The local port of this connection, as {@code CLIENT LIST} shows it in {@code addr}. */
    int localPort() {
        return socket.getLocalPort();
    }

    @Override
    public void close() throws IOException {
        socket.close();
    }
}
