package dev.sema.spring;

import dev.sema.Fairness;
import dev.sema.LeakDetection;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

/**
 * The {@code sema.*} properties (see the {@linkplain dev.sema.spring package overview} for an example and every
 * property). They are only read here; whether they make sense together (a required {@code permits},
 * {@code max-permits} not below it, a Redis for {@code redis: true}, ...) is checked when the
 * {@link SemaphoreRegistry} is built, and a mistake stops the application with a message naming the property
 * and its value. (The {@code @param} texts are the descriptions IDEs show, from Spring Boot's configuration
 * metadata, hence plain text.)
 *
 * @param redis Where the Redis semaphores live.
 * @param semaphores The semaphores by name (each semaphore's name()), in configuration order.
 * @param web The servlet filter that lets inbound requests through one semaphore.
 * @param keyed Keyed semaphores by name: families of one semaphore per key (a tenant, a user), each made on its
 *        key's first request and gone once idle. Get one with registry.keyed(name), or use it with
 *        WithPermits(value = name, key = "#tenant.id") or sema.web.keyed. A name must not also be one of
 *        sema.semaphores.
 */
@ConfigurationProperties("sema")
public record SemaProperties(@DefaultValue Redis redis, Map<String, SemaphoreProperties> semaphores,
        @DefaultValue Web web, Map<String, KeyedProperties> keyed) {

    /**
     * Keeps the semaphores and families in configuration order, read-only.
     *
     * @param redis where the Redis semaphores live
     * @param semaphores the semaphores, by name; {@code null} for none
     * @param web the inbound request filter
     * @param keyed the keyed families, by name; {@code null} for none
     */
    public SemaProperties {
        semaphores = semaphores == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(semaphores));
        keyed = keyed == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(keyed));
    }

    /**
     * {@code sema.keyed.<name>.*}: one keyed family.
     *
     * @param permits Each key's limit: how many permits one key may hold at once. Required; 0 up to max-permits. On
     *        Redis, the limit a key's semaphore is created with (the stored one wins while it exists).
     * @param maxKeys Most keys live at once (holding permits or with requests waiting); a request that would make
     *        one more is refused (503 over HTTP). Defaults to 100000; at least 1. On Redis, the keys live in this
     *        process (every process has this bound of its own).
     * @param maxPermits Ceiling of a key's limit. Defaults to permits. Local families only.
     * @param parent Semaphore of sema.semaphores that every key's permits also hold as many of, a limit for all
     *        keys together: its name (api), or a partition of it (api/batch). Local or Redis, for a family of
     *        either kind.
     * @param redis Whether the family's keys live in Redis, shared by the fleet: the semaphore of key k is the Redis
     *        semaphore named name:k, whose limit every process that configures the family shares. Keys are then
     *        compared as text (String.valueOf), and a key that is empty or contains a brace is refused. Needs
     *        sema.redis.uri or a RedisSemaphores bean.
     * @param leakDetection Whether Permits of a key that become unreachable while holding permits are reported and
     *        their permits returned: off, sampled or paranoid. Local families only.
     * @param lease How long a key's grant lives in Redis unless renewed (it is renewed while the permit is open and
     *        the process lives). Redis families only; defaults to 30s.
     * @param expireWhenIdle How long after its last use a key's semaphore disappears from Redis. Redis families
     *        only; defaults to 10m.
     */
    public record KeyedProperties(Long permits, Integer maxKeys, Long maxPermits, String parent,
            @DefaultValue("false") boolean redis, @DefaultValue("off") LeakDetection leakDetection, Duration lease,
            Duration expireWhenIdle) {
    }

    /**
     * {@code sema.redis.*}: the Redis that {@code redis: true} semaphores live in.
     *
     * @param uri Redis to connect to, such as redis://127.0.0.1:6379, rediss://host:6380 or
     *        redis-sentinel://host:26379,host:26380/0#primary. With it the starter opens a RedisSemaphores of its
     *        own (closed at shutdown), unless the application defines a RedisSemaphores bean, which is used
     *        instead.
     * @param failFast Whether a Redis that cannot be reached at startup stops the start. By default the application
     *        starts, its Redis semaphores refuse every request (503 from sema.web and @WithPermits) and the
     *        semaphores health contributor is DOWN until Redis is reached, which the starter keeps trying in the
     *        background.
     */
    public record Redis(String uri, @DefaultValue("false") boolean failFast) {
    }

    /**
     * {@code sema.semaphores.<name>.*}: one semaphore.
     *
     * @param permits Limit the semaphore starts with: how many permits may be held at once. Required; 0 up to
     *        max-permits.
     * @param maxPermits Ceiling the limit may be raised to later (setPermits, the actuator endpoint, an adaptive
     *        limit, a refill). Defaults to permits.
     * @param fairness Order of service: fifo (waiters in arrival order) or barging (new requests take free permits
     *        whatever the queue). A Redis semaphore is always fifo.
     * @param leakDetection Whether Permits that become unreachable while holding permits are reported and their
     *        permits returned: off, sampled (for production) or paranoid (every acquiring stack, for tests). Local
     *        semaphores only.
     * @param refill Credit that accrues over time: the limit grows by refill.permits every refill.period, up to
     *        max-permits. Local semaphores only.
     * @param redis Whether this is a RedisSemaphore of this name, shared by every process that uses the same
     *        Redis and name (the limit and ceiling stored in Redis win once it exists). Needs sema.redis.uri or a
     *        RedisSemaphores bean.
     * @param lease How long a grant lives in Redis unless renewed (it is renewed while the permit is open and the
     *        process lives). Redis semaphores only; defaults to 30s.
     * @param expireWhenIdle How long after its last use the semaphore disappears from Redis, when this process
     *        creates it. Redis semaphores only; defaults to never.
     * @param adaptive Adaptive limit that moves the limit toward what the downstream can take.
     * @param partitions Partitions of the limit, by name, with the share each is guaranteed, e.g. { checkout: 0.6,
     *        browse: 0.3, batch: 0.1 }. The order is the priority (first = highest): it is the order in which they are
     *        written in the file that declares them (application.yml or application.properties); a profile, an
     *        environment variable or a system property that changes a share keeps the partition's place, and one that
     *        adds a partition puts it after the others. Two or more partitions declared only in environment variables,
     *        system properties or command-line arguments, which have no order, stop the start. Each share is greater
     *        than 0 and at most 1, all add up to at most 1; a partition is guaranteed floor(share x limit) permits.
     *        The semaphore must be fifo; a Redis semaphore's are stored at creation. Get a partition with
     *        registry.get(name).partition(partition).
     */
    public record SemaphoreProperties(Long permits, Long maxPermits, @DefaultValue("fifo") Fairness fairness,
            @DefaultValue("off") LeakDetection leakDetection, Refill refill, @DefaultValue("false") boolean redis,
            Duration lease, Duration expireWhenIdle, Adaptive adaptive, Map<String, Double> partitions) {

        /**
         * Keeps the partitions read-only, in the order bound (the registry puts them in declaration order).
         *
         * @param permits the limit
         * @param maxPermits the ceiling
         * @param fairness the order of service
         * @param leakDetection the leak detection
         * @param refill the refill, or {@code null}
         * @param redis whether it is a Redis semaphore
         * @param lease the Redis lease, or {@code null}
         * @param expireWhenIdle the Redis idle expiry, or {@code null}
         * @param adaptive the adaptive limit, or {@code null}
         * @param partitions the partitions' shares by name; {@code null} for none
         */
        public SemaphoreProperties {
            partitions = partitions == null ? Map.of() : Collections.unmodifiableMap(new LinkedHashMap<>(partitions));
        }
    }

    /**
     * {@code sema.semaphores.<name>.refill.*}: credit that accrues over time.
     *
     * @param permits Permits added every period; at least 1.
     * @param period How often permits are added; at least 1ms.
     */
    public record Refill(Long permits, Duration period) {
    }

    /**
     * {@code sema.semaphores.<name>.adaptive.*}: an {@link dev.sema.AdaptiveLimit} on the semaphore.
     *
     * @param algorithm Algorithm: gradient (latency-based) or aimd (loss-based). Required.
     * @param minLimit Lowest limit it sets. Defaults to 1.
     * @param maxLimit Highest limit it sets. Defaults to, and is capped by, the semaphore's max-permits.
     * @param initialLimit Limit it starts from. Defaults to permits, brought within the bounds.
     */
    public record Adaptive(Algorithm algorithm, Long minLimit, Long maxLimit, Long initialLimit) {
    }

    /** The algorithm of an adaptive limit. */
    public enum Algorithm {
        /** Additive increase, multiplicative decrease: {@link dev.sema.AdaptiveLimit#aimd()}. */
        AIMD,
        /** Long-term against short-term hold time: {@link dev.sema.AdaptiveLimit#gradient()}. */
        GRADIENT
    }

    /**
     * {@code sema.web.*}: inbound requests through one semaphore (a servlet filter, or in a WebFlux application a
     * {@code WebFilter}; one permit per request, held until the response is complete, asynchronous requests
     * included).
     *
     * @param semaphore Name of the semaphore (under sema.semaphores) that inbound requests take a permit of.
     *        Without it there is no filter.
     * @param paths Request paths the filter applies to, as Ant-style patterns such as /api/**, comma-separated.
     * @param maxWait How long a request may wait for a permit before it is refused with 503. 0 refuses it at once
     *        when none is free.
     * @param retryAfter Retry-After of the 503 answers, for refused requests and for PermitUnavailableException in
     *        Spring MVC, in whole seconds (rounded up).
     * @param excludePaths Request paths never limited, as Ant-style patterns, comma-separated; they win over paths.
     *        Defaults to the actuator's base path (management.endpoints.web.base-path, /actuator unless set), so
     *        that health and readiness probes are never refused; nothing when the actuator is absent or served on
     *        a port of its own (management.server.port). Set it empty to limit the actuator too.
     * @param partitionHeader Request header whose value names the partition of the semaphore that a request takes its
     *        permit of, e.g. X-Traffic-Class: batch. A request without it, or whose value names no partition, is of no
     *        partition (the semaphore's own requests, served after every partition's) unless partition-paths places
     *        it. It wins over partition-paths. Any client can send it: use it when a proxy in front of the application
     *        sets or removes it.
     * @param partitionPaths Request paths by partition, as Ant-style patterns, comma-separated, e.g. { checkout:
     *        /api/checkout/**, batch: /api/export/** }: a request that the filter limits takes its permit of the first
     *        partition, in the order written, with a pattern that matches its path; one that matches none is of no
     *        partition. A partition-header that names a partition wins over these.
     * @param keyed Name of a keyed family (under sema.keyed) that each limited request also takes a permit of, for
     *        its key (sema.web.key): the key's permit first, then the semaphore's, both held until the response is
     *        complete. With it, sema.web.semaphore may be left out.
     * @param key Where a request's key comes from, for sema.web.keyed: header:NAME (the header's value), principal
     *        (the authenticated user's name) or remote-address (the client's IP address). A request without one is
     *        refused with 400.
     */
    public record Web(String semaphore, @DefaultValue("/**") List<String> paths, @DefaultValue("0ms") Duration maxWait,
            @DefaultValue("1s") Duration retryAfter, List<String> excludePaths, String partitionHeader,
            Map<String, List<String>> partitionPaths, String keyed, String key) {

        /**
         * Keeps the partition paths read-only, in the order bound (the filter puts them in declaration order).
         *
         * @param semaphore the semaphore's name
         * @param paths the limited paths
         * @param maxWait the longest wait
         * @param retryAfter the Retry-After of a 503
         * @param excludePaths the paths never limited, or {@code null} for the default
         * @param partitionHeader the header naming a request's partition, or {@code null}
         * @param partitionPaths the paths of each partition; {@code null} for none
         * @param keyed the keyed family's name, or {@code null}
         * @param key where a request's key comes from, or {@code null}
         */
        public Web {
            partitionPaths = partitionPaths == null ? Map.of()
                    : Collections.unmodifiableMap(new LinkedHashMap<>(partitionPaths));
        }
    }
}
