package dev.sema.spring;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonPropertyOrder;
import dev.sema.AdaptiveLimit;
import dev.sema.KeyedSemaphore;
import dev.sema.Semaphore;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.InvalidEndpointRequestException;
import org.springframework.boot.actuate.endpoint.OperationResponseBody;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.annotation.WriteOperation;

/**
 * The {@code semaphores} actuator endpoint: every semaphore and keyed family of the {@link SemaphoreRegistry} with
 * its counts,
 * and a way to change a limit at run time.
 *
 * <pre>
 * GET  /actuator/semaphores       {"semaphores": {
 *                                    "db": {"kind": "local", "permits": 10, "maxPermits": 50, "available": 10,
 *                                           "queued": 0, "closed": false, "fairness": "FIFO"},
 *                                    "partner": {"kind": "redis", "permits": 20, "maxPermits": 200,
 *                                           "available": 18, "queued": 0, "closed": false, "fairness": "FIFO",
 *                                           "adaptive": {"algorithm": "gradient", "minLimit": 4,
 *                                                        "maxLimit": 200, "limit": 20}},
 *                                    "api": {"kind": "local", "permits": 100, "maxPermits": 100,
 *                                           "available": 97, "queued": 1, "closed": false, "fairness": "FIFO",
 *                                           "partitions": [
 *                                             {"name": "checkout", "share": 0.6, "held": 2, "guarantee": 60,
 *                                              "queued": 0},
 *                                             {"name": "batch", "share": 0.1, "held": 1, "guarantee": 10,
 *                                              "queued": 1}]},
 *                                    "fleet": {"kind": "redis", "error": "RedisSemaphoreException: ..."},
 *                                    "exports": {"kind": "keyed", "keys": 3, "maxKeys": 100000,
 *                                           "permitsPerKey": 5, "closed": false},
 *                                    "quotas": {"kind": "keyed", "redis": true, "keys": 1, "maxKeys": 100000,
 *                                           "permitsPerKey": 2, "closed": false}}}
 * GET  /actuator/semaphores/db    {"kind": "local", "permits": 10, ...}; 404 for an unknown name, 503 with
 *                                 {"kind": "redis", "error": "..."} for one whose state cannot be read
 * POST /actuator/semaphores/db    {"permits": 20}: setPermits(20), then the new state; 404 for an unknown
 *                                 name, 400 with {"error": "..."} for a permits that is missing, not a whole
 *                                 number or outside 0..maxPermits, 503 with {"error": "..."} naming the
 *                                 semaphore when Redis refused the change
 * </pre>
 *
 * <p>The fields come in the order shown, which is kept. {@code adaptive} is there only for a semaphore with an
 * {@link AdaptiveLimit} ({@code sema.semaphores.<name>.adaptive}): its algorithm, its bounds
 * ({@code maxLimit} is the configured one capped by {@code maxPermits}), and the limit it last set or
 * adopted (for a Redis semaphore, the fleet's limit as this process last saw it, while {@code permits} is the
 * fleet's limit now). {@code partitions} is there only for a partitioned semaphore
 * ({@code sema.semaphores.<name>.partitions}): each partition in priority order, with the permits its requests
 * hold, its guarantee under the current limit and its own queue; the semaphore's {@code queued} counts every
 * partition's queue and its own requests' queue together.
 *
 * <p>Keyed families ({@code sema.keyed}) follow the semaphores, as {@code kind} {@code keyed}: their live keys (never
 * the keys themselves), {@code maxKeys}, and {@code permitsPerKey}, the configured limit of each key (left out for a
 * family of an application's own registry, whose limit may be a function of the key). A family on Redis
 * ({@code redis: true}) says so with {@code "redis": true}; its {@code keys} and {@code maxKeys} are this process's,
 * read without a round trip (a key's limit in Redis is the one it was created with, which may differ from
 * {@code permitsPerKey} while another configuration's key lives). A family's limit cannot be changed here: a POST on
 * one answers 400.
 *
 * <p>Over HTTP it must be exposed like any other endpoint
 * ({@code management.endpoints.web.exposure.include=semaphores}); the status codes come from
 * {@link SemaphoresEndpointWebExtension}. The counts of a Redis semaphore are read with one round trip, so
 * they belong together. A Redis that cannot be reached does not fail the whole answer: each semaphore whose
 * state cannot be read shows {@code error} (its failure's class and message, passwords redacted) instead of
 * its counts, and the others their counts. The Redis semaphores are read in parallel, the wait bounded in all,
 * as the health contributor reads them ({@link SemaphoreState#readAll}). A limit set here on a Redis semaphore
 * is the fleet's. With an adaptive limit, the limit set here is the new starting point it adjusts from.
 */
@Endpoint(id = "semaphores")
public class SemaphoresEndpoint {
    private final SemaphoreRegistry registry;

    /**
     * The endpoint over a registry.
     *
     * @param registry the semaphores to show
     */
    public SemaphoresEndpoint(SemaphoreRegistry registry) {
        this.registry = Objects.requireNonNull(registry, "registry");
    }

    /**
     * Every semaphore, in configuration order: its state, or why it cannot be read.
     *
     * @return the semaphores by name
     */
    @ReadOperation
    public SemaphoresDescriptor semaphores() {
        Map<String, Semaphore> all = registry.all();
        Map<String, SemaphoreEntry> entries = new LinkedHashMap<>();
        SemaphoreState.readAll(all).forEach((name, reading) -> entries.put(name, entry(name, reading)));
        registry.allKeyed().forEach((name, family) -> entries.putIfAbsent(name, keyed(name, family)));
        return new SemaphoresDescriptor(entries);
    }

    /**
     * One semaphore.
     *
     * @param name its name
     * @return its state or why it cannot be read, or {@code null} (404 over HTTP) when there is none of that
     *     name
     */
    @ReadOperation
    public @Nullable SemaphoreEntry semaphore(@Selector String name) {
        Semaphore s = registry.find(name).orElse(null);
        if (s == null) {
            KeyedSemaphore<Object> family = registry.allKeyed().get(name);
            return family == null ? null : keyed(name, family);
        }
        return entry(name, SemaphoreState.readOne(name, s));
    }

    private KeyedDescriptor keyed(String name, KeyedSemaphore<Object> family) {
        Long perKey = registry instanceof ConfiguredSemaphoreRegistry c ? c.permitsPerKey(name) : null;
        return new KeyedDescriptor("keyed", SemaphoreState.isRedis(family), family.size(), family.maxKeys(), perKey,
                family.isClosed());
    }

    /** A POST on a keyed family: refused with what to do instead. */
    private void refuseFamily(String name) {
        if (registry.allKeyed().containsKey(name)) {
            String message = "'" + name + "' is a keyed family, whose limit per key cannot be changed at run time"
                    + " (set sema.keyed." + name + ".permits)";
            throw new InvalidEndpointRequestException(message, message);
        }
    }

    /**
     * Sets a semaphore's limit ({@link Semaphore#setPermits(long)}): never blocks on the semaphore and never
     * revokes held permits; a raised limit serves waiters at once.
     *
     * @param name its name
     * @param permits the new limit, {@code 0..maxPermits}
     * @return its new state (or, should it not be readable just after, why), or {@code null} (404 over HTTP)
     *     when there is none of that name
     * @throws InvalidEndpointRequestException (400 over HTTP) if {@code permits} is out of range
     * @throws RuntimeException (503 over HTTP) from {@link Semaphore#setPermits(long)}, typically a
     *     {@code RedisSemaphoreException} when Redis cannot be reached
     */
    @WriteOperation
    public @Nullable SemaphoreEntry setPermits(@Selector String name, long permits) {
        refuseFamily(name);
        Semaphore s = registry.find(name).orElse(null);
        return s == null ? null : set(name, s, permits);
    }

    /**
     * {@link #setPermits(String, long)} as HTTP asks it, with {@code permits} as the request gave it, checked
     * here so that a missing or malformed one is a 400 that says what was expected.
     */
    @Nullable SemaphoreEntry setPermitsAsRequested(String name, @Nullable String permits) {
        refuseFamily(name);
        Semaphore s = registry.find(name).orElse(null);
        return s == null ? null : set(name, s, parse(name, s, permits));
    }

    private SemaphoreEntry set(String name, Semaphore s, long permits) {
        if (permits < 0 || permits > s.maxPermits()) {
            String message = "permits (" + permits + ") must be between 0 and the maxPermits of semaphore '" + name
                    + "' (" + s.maxPermits() + ")";
            throw new InvalidEndpointRequestException(message, message);
        }
        s.setPermits(permits);
        return entry(name, SemaphoreState.readOne(name, s));
    }

    private static long parse(String name, Semaphore s, @Nullable String permits) {
        String expected = ": send {\"permits\": n} with n a whole number in 0.." + s.maxPermits()
                + " (the maxPermits of semaphore '" + name + "')";
        if (permits == null) {
            String message = "permits is missing" + expected;
            throw new InvalidEndpointRequestException(message, message);
        }
        try {
            return Long.parseLong(permits);
        } catch (NumberFormatException e) {
            String message = "permits (" + abbreviated(permits) + ") is not a whole number" + expected;
            throw new InvalidEndpointRequestException(message, message);
        }
    }

    /** Enough of a value to recognise it: a message must not echo a request body of any length. */
    private static String abbreviated(String value) {
        return value.length() <= 40 ? value : value.substring(0, 40) + "...";
    }

    private SemaphoreEntry entry(String name, SemaphoreState.Reading reading) {
        return switch (reading) {
            case SemaphoreState.Readable(SemaphoreState st) -> {
                Semaphore s = registry.get(name);
                AdaptiveLimit a = registry.adaptive(name).orElse(null);
                yield new SemaphoreDescriptor(st.kind(), st.permits(), st.maxPermits(), st.available(),
                        st.queued(), st.closed(), s.fairness().name(), a == null ? null
                                : new AdaptiveDescriptor(a.algorithm(), a.minLimit(), a.maxLimit(), a.limit()),
                        st.partitions().stream().map(p -> new PartitionDescriptor(p.name(), p.share(), p.used(),
                                p.guarantee(), p.queued())).toList());
            }
            case SemaphoreState.Unreadable(String kind, String problem) -> new UnreadableDescriptor(kind, problem);
        };
    }

    /**
     * The body of {@code GET /actuator/semaphores}.
     *
     * @param semaphores the semaphores by name, in configuration order
     */
    public record SemaphoresDescriptor(Map<String, SemaphoreEntry> semaphores) implements OperationResponseBody {
    }

    /**
     * What the endpoint shows of one semaphore: its state ({@link SemaphoreDescriptor}), or why it cannot be
     * read ({@link UnreadableDescriptor}).
     */
    public sealed interface SemaphoreEntry extends OperationResponseBody
            permits SemaphoreDescriptor, UnreadableDescriptor, KeyedDescriptor {
    }

    /**
     * A keyed family.
     *
     * @param kind {@code keyed}
     * @param redis whether its keys live in Redis, shared by the fleet (left out of the JSON when not)
     * @param keys the live keys: those holding permits or with requests waiting (on Redis, in this process)
     * @param maxKeys the most keys live at once
     * @param permitsPerKey each key's limit as configured, or {@code null} (left out of the JSON) when not known
     * @param closed whether it is closed
     */
    @JsonPropertyOrder({"kind", "redis", "keys", "maxKeys", "permitsPerKey", "closed"})
    public record KeyedDescriptor(String kind, @JsonInclude(JsonInclude.Include.NON_DEFAULT) boolean redis, int keys,
            int maxKeys,
            @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable Long permitsPerKey, boolean closed)
            implements SemaphoreEntry {
    }

    /**
     * One semaphore's state.
     *
     * @param kind {@code local} or {@code redis}
     * @param permits the limit
     * @param maxPermits the ceiling
     * @param available {@code permits} less what is held (negative after the limit was lowered below it)
     * @param queued the requests waiting now
     * @param closed whether it is closed
     * @param fairness {@code FIFO} or {@code BARGING}
     * @param adaptive its adaptive limit, or {@code null} (left out of the JSON) when it has none
     * @param partitions its partitions in priority order, empty (left out of the JSON) when it has none
     */
    @JsonPropertyOrder({"kind", "permits", "maxPermits", "available", "queued", "closed", "fairness", "adaptive",
            "partitions"})
    public record SemaphoreDescriptor(String kind, long permits, long maxPermits, long available, int queued,
            boolean closed, String fairness,
            @JsonInclude(JsonInclude.Include.NON_NULL) @Nullable AdaptiveDescriptor adaptive,
            @JsonInclude(JsonInclude.Include.NON_EMPTY) List<PartitionDescriptor> partitions)
            implements SemaphoreEntry {
    }

    /**
     * One partition of a semaphore.
     *
     * @param name the partition's name
     * @param share its share of the limit
     * @param held the permits its requests hold
     * @param guarantee the permits it is guaranteed: {@code floor(share × permits)}
     * @param queued its requests waiting now
     */
    @JsonPropertyOrder({"name", "share", "held", "guarantee", "queued"})
    public record PartitionDescriptor(String name, double share, long held, long guarantee, int queued) {
    }

    /**
     * A semaphore's adaptive limit.
     *
     * @param algorithm {@code aimd} or {@code gradient}
     * @param minLimit the lowest limit it sets
     * @param maxLimit the highest limit it sets: the configured one capped by the semaphore's {@code maxPermits}
     * @param limit the limit it last set or adopted ({@link AdaptiveLimit#limit()})
     */
    @JsonPropertyOrder({"algorithm", "minLimit", "maxLimit", "limit"})
    public record AdaptiveDescriptor(String algorithm, long minLimit, long maxLimit, long limit) {
    }

    /**
     * A semaphore whose state could not be read: Redis unreachable, or no reply in time.
     *
     * @param kind {@code redis} (a local semaphore is always readable)
     * @param error the failure's class and message ({@code "RedisSemaphoreException: ..."}), passwords
     *     redacted, or that no reply came in time
     */
    @JsonPropertyOrder({"kind", "error"})
    public record UnreadableDescriptor(String kind, String error) implements SemaphoreEntry {
    }
}
