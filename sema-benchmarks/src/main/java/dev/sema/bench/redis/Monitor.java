package dev.sema.bench.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Counts what Redis executes, per client connection, from a {@code MONITOR} stream read on a thread of its
 * own. MONITOR shows every command a client sent as {@code [db ip:port] "cmd" ...} and every command a
 * Lua script ran as {@code [db lua] "cmd" ...}, right after the script's own EVAL or EVALSHA line; the
 * script's commands are counted under the connection that sent it. This tells round trips (commands sent)
 * apart from the work inside scripts, which {@code INFO commandstats} lumps together.
 *
 * <p>{@link #stop(String, Runnable)} ends the stream at a marker ({@code ECHO token}) sent by the observer after the
 * measured operations, so nothing they caused is missed.
 */
final class Monitor {
    private final Socket socket;
    private final Thread reader;
    private final CountDownLatch done = new CountDownLatch(1);
    private final CountDownLatch started = new CountDownLatch(1);
    private volatile String marker;
    private volatile IOException failure;
    /** addr -> command -> count, for the commands clients sent; written by the reader only. */
    private final Map<String, Map<String, long[]>> issued = new HashMap<>();
    /** addr -> command -> count, for the commands run by that client's scripts; written by the reader only. */
    private final Map<String, Map<String, long[]>> inScripts = new HashMap<>();
    /** addr -> script SHA-1 -> count of EVALSHAs of it; written by the reader only. */
    private final Map<String, Map<String, long[]>> scripts = new HashMap<>();

    private Monitor(Socket socket) {
        this.socket = socket;
        this.reader = Thread.ofPlatform().daemon().name("redis-monitor").unstarted(this::readLoop);
    }

    /** Opens a connection named {@code bench-monitor} and starts MONITOR on it. */
    static Monitor start(String host, int port) throws IOException, InterruptedException {
        Socket s = new Socket();
        s.connect(new InetSocketAddress(host, port), 2_000);
        s.setSoTimeout(30_000);
        Monitor m = new Monitor(s);
        OutputStream out = s.getOutputStream();
        out.write(resp("CLIENT", "SETNAME", "bench-monitor"));
        out.write(resp("MONITOR"));
        out.flush();
        m.reader.start();
        if (!m.started.await(10, TimeUnit.SECONDS) || m.failure != null) {
            s.close();
            throw new IOException("MONITOR did not start", m.failure);
        }
        return m;
    }

    private static byte[] resp(String... args) {
        StringBuilder sb = new StringBuilder("*").append(args.length).append("\r\n");
        for (String a : args) {
            sb.append('$').append(a.length()).append("\r\n").append(a).append("\r\n");
        }
        return sb.toString().getBytes(StandardCharsets.US_ASCII);
    }

    /** What a window counted, by client address: commands sent, commands run by scripts, EVALSHAs by SHA-1. */
    record Counts(Map<String, Map<String, Long>> issued, Map<String, Map<String, Long>> inScripts,
            Map<String, Map<String, Long>> scripts) {
    }

    /**
     * Waits until the stream shows the command that carries {@code token} (the caller sends it next, e.g.
     * {@code ECHO token}), stops, and returns the counts.
     */
    Counts stop(String token, Runnable sendMarker) throws IOException, InterruptedException {
        marker = token;
        sendMarker.run();
        boolean ended = done.await(60, TimeUnit.SECONDS);
        socket.close();
        reader.join(TimeUnit.SECONDS.toMillis(10));
        if (!ended) {
            throw new IOException("MONITOR did not show the marker within 60 s", failure);
        }
        if (failure != null) {
            throw failure;
        }
        return new Counts(copy(issued), copy(inScripts), copy(scripts));
    }

    private static Map<String, Map<String, Long>> copy(Map<String, Map<String, long[]>> m) {
        Map<String, Map<String, Long>> out = new TreeMap<>();
        m.forEach((addr, byCmd) -> {
            Map<String, Long> c = new TreeMap<>();
            byCmd.forEach((cmd, n) -> c.put(cmd, n[0]));
            out.put(addr, c);
        });
        return out;
    }

    private void readLoop() {
        byte[] buf = new byte[1 << 16];
        byte[] line = new byte[1 << 12];
        int lineLen = 0;
        int oks = 0;
        String lastClient = "?";
        try {
            InputStream in = socket.getInputStream();
            for (;;) {
                int n = in.read(buf);
                if (n < 0) {
                    throw new IOException("MONITOR connection closed");
                }
                for (int i = 0; i < n; i++) {
                    byte b = buf[i];
                    if (b != '\n') {
                        if (lineLen == line.length) {
                            line = java.util.Arrays.copyOf(line, line.length * 2);
                        }
                        line[lineLen++] = b;
                        continue;
                    }
                    int len = lineLen > 0 && line[lineLen - 1] == '\r' ? lineLen - 1 : lineLen;
                    lineLen = 0;
                    if (oks < 2) { // the replies to CLIENT SETNAME and MONITOR
                        if (len >= 3 && line[0] == '+' && line[1] == 'O' && line[2] == 'K') {
                            if (++oks == 2) {
                                started.countDown();
                            }
                        } else if (len > 0 && line[0] == '-') {
                            throw new IOException(new String(line, 0, len, StandardCharsets.UTF_8));
                        }
                        continue;
                    }
                    String text = new String(line, 0, len, StandardCharsets.ISO_8859_1);
                    int open = text.indexOf(" [");
                    int close = text.indexOf("] \"", open + 2);
                    if (open < 0 || close < 0) {
                        continue;
                    }
                    int space = text.indexOf(' ', open + 2);
                    String addr = text.substring(space + 1, close);
                    int cmdStart = close + 3;
                    int cmdEnd = text.indexOf('"', cmdStart);
                    String cmd = text.substring(cmdStart, cmdEnd).toLowerCase(Locale.ROOT);
                    String m = marker;
                    if (m != null && text.contains(m)) {
                        done.countDown();
                        return;
                    }
                    if (addr.equals("lua")) {
                        inScripts.computeIfAbsent(lastClient, k -> new HashMap<>())
                                .computeIfAbsent(cmd, k -> new long[1])[0]++;
                    } else {
                        lastClient = addr;
                        issued.computeIfAbsent(addr, k -> new HashMap<>())
                                .computeIfAbsent(cmd, k -> new long[1])[0]++;
                        if (cmd.equals("evalsha") && text.startsWith(" \"", cmdEnd + 1)) {
                            int shaEnd = text.indexOf('"', cmdEnd + 3);
                            String sha = text.substring(cmdEnd + 3, shaEnd).toLowerCase(Locale.ROOT);
                            scripts.computeIfAbsent(addr, k -> new HashMap<>())
                                    .computeIfAbsent(sha, k -> new long[1])[0]++;
                        }
                    }
                }
            }
        } catch (IOException e) {
            failure = e;
            started.countDown();
            done.countDown();
        }
    }
}
