package dev.sema.bench.redis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * What Redis executed between {@link #open} and {@link #close()}: the {@code INFO commandstats} deltas
 * ({@code CONFIG RESETSTAT} at the start), less the observer's own commands, and optionally, from
 * {@link Monitor}, the commands each named client connection sent and the commands its scripts ran.
 */
final class CommandWindow {
    private final RawRedis observer;
    private final Monitor monitor;
    private final Map<String, Long> observerBefore;

    private CommandWindow(RawRedis observer, Monitor monitor, Map<String, Long> observerBefore) {
        this.observer = observer;
        this.monitor = monitor;
        this.observerBefore = observerBefore;
    }

    /**
     * What one window counted.
     *
     * @param executed every command Redis executed, by {@code commandstats} name, scripts' included,
     *        without the observer's own
     * @param executedMicros the microseconds Redis spent in each command, as {@code commandstats}
     *        reports them (a script's time includes the commands it ran, which are also counted alone)
     * @param issuedByClient client name -> command -> count of commands that client's connections sent
     *        (empty without MONITOR)
     * @param inScriptsByClient client name -> command -> count of commands run by that client's scripts
     *        (empty without MONITOR)
     * @param scriptsByClient client name -> script SHA-1 -> count of that client's EVALSHAs of it (empty
     *        without MONITOR)
     */
    record Counts(Map<String, Long> executed, Map<String, Long> executedMicros,
            Map<String, Map<String, Long>> issuedByClient, Map<String, Map<String, Long>> inScriptsByClient,
            Map<String, Map<String, Long>> scriptsByClient) {

        /** The sum of {@code m}'s counts over the clients whose name starts with {@code prefix}. */
        static Map<String, Long> sumFor(Map<String, Map<String, Long>> m, String prefix) {
            Map<String, Long> out = new TreeMap<>();
            m.forEach((client, byCmd) -> {
                if (client.startsWith(prefix)) {
                    byCmd.forEach((cmd, n) -> out.merge(cmd, n, Long::sum));
                }
            });
            return out;
        }
    }

    static CommandWindow open(RawRedis observer, Endpoint redis, boolean withMonitor)
            throws IOException, InterruptedException {
        Monitor m = withMonitor ? Monitor.start(redis.host(), redis.port()) : null;
        Map<String, Long> before = observer.sent();
        observer.call("CONFIG", "RESETSTAT");
        return new CommandWindow(observer, m, before);
    }

    Counts close() throws IOException, InterruptedException {
        Map<String, Long> mine = observer.sent();
        observerBefore.forEach((k, v) -> mine.merge(k, -v, Long::sum));
        // INFO's own call is not in its reply: what the observer sent up to here is all there is to subtract.
        String info = (String) observer.call("INFO", "commandstats");
        Map<String, Long> executed = parseCommandstats(info, "calls=");
        Map<String, Long> micros = parseCommandstats(info, "usec=");
        mine.forEach((k, v) -> {
            if (v != 0) {
                micros.remove(k); // the observer's share of that command's time is unknown
            }
        });
        micros.values().removeIf(v -> v == 0);
        mine.forEach((k, v) -> {
            if (v != 0) {
                executed.merge(k, -v, Long::sum);
            }
        });
        executed.values().removeIf(v -> v == 0);
        if (monitor == null) {
            return new Counts(executed, micros, Map.of(), Map.of(), Map.of());
        }
        String token = "sema-bench-marker-" + UUID.randomUUID();
        Monitor.Counts byAddr = monitor.stop(token, () -> {
            try {
                observer.call("ECHO", token);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        });
        Map<String, String> names = clientNames((String) observer.call("CLIENT", "LIST"));
        return new Counts(executed, micros, byName(byAddr.issued(), names), byName(byAddr.inScripts(), names),
                byName(byAddr.scripts(), names));
    }

    private static Map<String, Map<String, Long>> byName(Map<String, Map<String, Long>> byAddr,
            Map<String, String> names) {
        Map<String, Map<String, Long>> out = new TreeMap<>();
        byAddr.forEach((addr, byCmd) -> {
            String name = names.getOrDefault(addr, "unnamed " + addr);
            if (name.startsWith("bench-")) {
                return; // the observer and the monitor
            }
            Map<String, Long> c = out.computeIfAbsent(name, k -> new TreeMap<>());
            byCmd.forEach((cmd, n) -> c.merge(cmd, n, Long::sum));
        });
        return out;
    }

    /** {@code addr -> name} from {@code CLIENT LIST}. */
    static Map<String, String> clientNames(String clientList) {
        Map<String, String> out = new HashMap<>();
        for (String line : clientList.split("\n")) {
            String addr = null;
            String name = "";
            for (String field : line.trim().split(" ")) {
                if (field.startsWith("addr=")) {
                    addr = field.substring(5);
                } else if (field.startsWith("name=")) {
                    name = field.substring(5);
                }
            }
            if (addr != null) {
                out.put(addr, name);
            }
        }
        return out;
    }

    /** {@code cmdstat_evalsha:calls=3,usec=...} lines to {@code evalsha -> 3} (for {@code field} "calls="). */
    static Map<String, Long> parseCommandstats(String info, String field) {
        Map<String, Long> out = new TreeMap<>();
        for (String line : info.split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            String name = line.substring("cmdstat_".length(), colon);
            for (String kv : line.substring(colon + 1).split(",")) {
                if (kv.startsWith(field)) {
                    out.put(name, Long.parseLong(kv.substring(field.length())));
                }
            }
        }
        return out;
    }
}
