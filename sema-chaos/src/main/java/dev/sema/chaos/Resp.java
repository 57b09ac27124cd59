package dev.sema.chaos;

import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * One Redis command on a connection of its own, in plain RESP: the scheduler and the sampler read Redis and
 * Sentinel without the client under test, so that the referee never shares its faults or its defects.
 */
final class Resp {

    /** An error reply ({@code -ERR ...}, {@code -MOVED ...}). */
    record Error(String message) {
    }

    /**
     * Sends {@code command} to {@code port} on loopback and returns its reply: a String (status or bulk), a
     * Long, a List of replies, null (a nil), or an {@link Error}.
     */
    static Object call(int port, int timeoutMillis, String... command) throws IOException {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), timeoutMillis);
            s.setSoTimeout(timeoutMillis);
            write(s.getOutputStream(), command);
            return read(new DataInputStream(s.getInputStream()));
        }
    }

    static void write(OutputStream out, String... command) throws IOException {
        out.write(encode(command));
        out.flush();
    }

    /** A command in RESP. */
    static byte[] encode(String... command) {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        b.writeBytes(("*" + command.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
        for (String a : command) {
            byte[] bytes = a.getBytes(StandardCharsets.UTF_8);
            b.writeBytes(("$" + bytes.length + "\r\n").getBytes(StandardCharsets.US_ASCII));
            b.writeBytes(bytes);
            b.writeBytes("\r\n".getBytes(StandardCharsets.US_ASCII));
        }
        return b.toByteArray();
    }

    static Object read(DataInputStream in) throws IOException {
        return read(in, false);
    }

    /** Reads one reply; with {@code raw}, a bulk string comes as its bytes (a meta value is binary). */
    static Object read(DataInputStream in, boolean raw) throws IOException {
        String head = line(in);
        if (head.isEmpty()) {
            throw new IOException("empty reply line");
        }
        String rest = head.substring(1);
        switch (head.charAt(0)) {
            case '+' -> {
                return rest;
            }
            case '-' -> {
                return new Error(rest);
            }
            case ':' -> {
                return Long.parseLong(rest);
            }
            case '$' -> {
                int n = Integer.parseInt(rest);
                if (n < 0) {
                    return null;
                }
                byte[] v = new byte[n];
                in.readFully(v);
                line(in);
                return raw ? v : new String(v, StandardCharsets.UTF_8);
            }
            case '*' -> {
                int n = Integer.parseInt(rest);
                if (n < 0) {
                    return null;
                }
                List<Object> items = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    items.add(read(in, raw));
                }
                return items;
            }
            default -> throw new IOException("not a RESP reply: " + head);
        }
    }

    static String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        for (;;) {
            int c = in.read();
            if (c < 0) {
                throw new IOException("connection closed");
            }
            if (c == '\r') {
                in.read();
                return b.toString();
            }
            b.append((char) c);
        }
    }

    private Resp() {
    }
}
