/**
 * Sema for Spring Boot 4.0: semaphores from properties, {@link dev.sema.spring.WithPermits}, inbound request
 * limiting, 503 with {@code Retry-After}, meters, an actuator endpoint and a health contributor.
 *
 * <p>Add {@code dev.sema:sema-spring-boot-starter}, and sema-redis, sema-micrometer, the actuator and Spring MVC (or
 * Spring WebFlux with sema-reactor) for the parts that need them: each part switches on only when its classes are on the class path (and, for Redis,
 * a URI or a {@code RedisSemaphores} bean is there). sema-core and sema-redis know nothing of Spring.
 *
 * {@snippet lang=yaml :
 * sema:
 *   redis.uri: redis://127.0.0.1:6379     # or the application defines a RedisSemaphores bean
 *   redis.fail-fast: false                # default: start while Redis is unreachable
 *   semaphores:
 *     db:                                 # the semaphore's name()
 *       permits: 10                       # required
 *       max-permits: 50                   # default: permits
 *       fairness: fifo                    # fifo | barging
 *       leak-detection: sampled           # off | sampled | paranoid
 *       refill: { permits: 5, period: 100ms }
 *     partner:
 *       permits: 20
 *       max-permits: 500
 *       redis: true                       # a RedisSemaphore of this name, shared by the fleet
 *       lease: 30s                        # Redis only; so is expire-when-idle
 *       adaptive: { algorithm: gradient, min-limit: 4, max-limit: 500 }  # or aimd; initial-limit too
 *     api:
 *       permits: 100
 *       partitions: { checkout: 0.6, browse: 0.3, batch: 0.1 }   # order written = priority; local only
 *   keyed:                                # one semaphore per key, made on first use, gone once idle
 *     exports: { permits: 5, max-keys: 100000, parent: api/batch }
 *     quotas: { permits: 2, redis: true, lease: 30s, expire-when-idle: 10m }  # each key shared by the fleet
 *   web:                                  # inbound requests through one semaphore (servlet filter or WebFilter)
 *     semaphore: api
 *     paths: /api/**                      # Ant-style, comma-separated; default /**
 *     max-wait: 0ms                       # how long a request may queue; default 0 (refuse at once)
 *     exclude-paths: /actuator/**         # default: the actuator's base path; never limited
 *     retry-after: 1s                     # the Retry-After of every 503
 *     partition-header: X-Traffic-Class   # its value names the request's partition; wins over the paths
 *     partition-paths: { checkout: /api/checkout/**, batch: /api/export/** }  # first match written wins
 *     keyed: exports                      # each request also holds a permit of its key, taken first
 *     key: header:X-Tenant                # header:NAME | principal | remote-address; none: 400
 * }
 *
 * <h2>Properties</h2>
 * <table class="striped">
 * <caption>The sema.* properties</caption>
 * <thead><tr><th>property</th><th>default</th><th>meaning</th></tr></thead>
 * <tbody>
 * <tr><td>{@code sema.redis.uri}</td><td>none</td><td>The Redis of the {@code redis: true} semaphores and keyed
 *     families ({@code redis://}, {@code rediss://}, {@code redis-sentinel://}). The starter connects to it
 *     itself (not as a bean) and closes the connection at shutdown, unless the application defines a
 *     {@code RedisSemaphores} bean (for Redis Cluster: {@code RedisSemaphores.connectCluster}), which is used
 *     instead.</td></tr>
 * <tr><td>{@code sema.redis.fail-fast}</td><td>{@code false}</td><td>{@code true}: a Redis that cannot be reached
 *     at startup stops the start. By default the application starts; its Redis semaphores and keyed families
 *     refuse every request (503, or the {@code @WithPermits} fallback) and the health contributor is DOWN until
 *     the starter, trying again in the background (every 250 ms at first, then at most every 5 s), reaches
 *     Redis.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.permits}</td><td>required</td><td>The limit it starts with,
 *     {@code 0..max-permits}.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.max-permits}</td><td>{@code permits}</td><td>The ceiling the limit may be
 *     raised to ({@code setPermits}, the endpoint, an adaptive limit, a refill).</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.fairness}</td><td>{@code fifo}</td><td>{@code fifo} or {@code barging}
 *     ({@link dev.sema.Fairness}); a Redis semaphore is always {@code fifo}.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.leak-detection}</td><td>{@code off}</td><td>{@code off},
 *     {@code sampled} or {@code paranoid} ({@link dev.sema.LeakDetection}); local semaphores only.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.refill.permits}, {@code .refill.period}</td><td>none</td><td>The limit
 *     grows by {@code permits} every {@code period}, up to the ceiling (both required for a refill); local
 *     semaphores only.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.redis}</td><td>{@code false}</td><td>{@code true}: a
 *     {@code RedisSemaphore} of this name, shared by every process on the same Redis (the limit and ceiling
 *     stored in Redis win once it exists).</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.lease}</td><td>30s</td><td>Redis only: how long a grant lives unless
 *     renewed (100ms to 1d).</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.expire-when-idle}</td><td>never</td><td>Redis only: the semaphore
 *     disappears from Redis after this long unused (1s to 365d).</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.adaptive.algorithm}</td><td>required for an adaptive limit</td><td>
 *     {@code gradient} or {@code aimd} ({@link dev.sema.AdaptiveLimit}).</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.adaptive.min-limit}, {@code .max-limit}, {@code .initial-limit}</td>
 *     <td>1, {@code max-permits}, {@code permits}</td><td>The bounds the adaptive limit keeps to, and where it
 *     starts.</td></tr>
 * <tr><td>{@code sema.semaphores.<name>.partitions.<partition>}</td><td>none</td><td>A partition of the limit
 *     and its share, in {@code (0, 1]}, all adding up to at most 1 (API.md §11a): guaranteed
 *     {@code floor(share × limit)} permits, and served before the partitions written after it. The order is the
 *     one written in the file that declares them; a profile, environment variable or system property that changes
 *     a share keeps the partition's place, one that adds a partition puts it last, and two or more declared only in
 *     environment variables, system properties or command-line arguments (which have no order) stop the start.
 *     The semaphore must be {@code fifo}. For a {@code redis: true} semaphore the partitions are stored when it
 *     is created and the stored ones win, as its limit does. Its view:
 *     {@code registry.get(name).partition(partition)}, which works from the moment Redis is reached.</td></tr>
 * <tr><td>{@code sema.metrics.per-sample-timers}</td><td>auto</td><td>{@code true}: the wait and hold timers are
 *     Micrometer timers fed one sample at a time, which follow {@code management.metrics.distribution} (percentile
 *     histograms with {@code _bucket} series, SLOs); {@code false}: Sema's own histograms, with p50 and p99
 *     gauges, for about half the cost. Unset: {@code true} exactly when a
 *     {@code management.metrics.distribution} setting ({@code percentiles-histogram}, {@code percentiles},
 *     {@code slo}) applies to {@code sema.acquire} or {@code sema.permit.hold}, looked up as Spring Boot does:
 *     the meter name, then its prefixes {@code sema.permit} and {@code sema}, then {@code all} (not for
 *     {@code slo}).</td></tr>
 * <tr><td>{@code sema.web.semaphore}</td><td>none (no filter)</td><td>The semaphore inbound requests take one
 *     permit of, held until the response is complete (asynchronous requests included).</td></tr>
 * <tr><td>{@code sema.web.paths}</td><td>{@code /**}</td><td>Ant-style patterns of the request paths within
 *     the application, comma-separated.</td></tr>
 * <tr><td>{@code sema.web.exclude-paths}</td><td>the actuator's base path</td><td>Ant-style patterns never
 *     limited, winning over {@code paths}: by default {@code /actuator} and {@code /actuator/**} (or whatever
 *     {@code management.endpoints.web.base-path} says), so that health and readiness probes are never refused;
 *     nothing when the actuator is absent, on a port of its own ({@code management.server.port}) or at the root.
 *     Set it empty to limit the actuator too.</td></tr>
 * <tr><td>{@code sema.web.max-wait}</td><td>0</td><td>How long a request may wait for a permit; then 503.</td></tr>
 * <tr><td>{@code sema.web.retry-after}</td><td>1s</td><td>The {@code Retry-After} of every 503 answer (the
 *     filter's and {@code PermitUnavailableException}'s), in whole seconds (rounded up).</td></tr>
 * <tr><td>{@code sema.web.partition-header}</td><td>none</td><td>A request header whose value names the
 *     partition of {@code sema.web.semaphore} a request takes its permit of; a missing header or a value naming
 *     no partition leaves the request to {@code partition-paths}, else to no partition (the semaphore's own
 *     requests, served after every partition's). It wins over {@code partition-paths}. Clients can send it: use
 *     it behind a proxy that sets or removes it.</td></tr>
 * <tr><td>{@code sema.web.partition-paths.<partition>}</td><td>none</td><td>Ant-style patterns, comma-separated,
 *     of the limited requests that take their permit of that partition: the first partition written with a
 *     matching pattern wins; a request matching none is of no partition.</td></tr>
 * <tr><td>{@code sema.keyed.<name>.permits}</td><td>required</td><td>Each key's limit in the keyed family
 *     {@code <name>} (a {@code KeyedSemaphore<Object>}, keys compared as given: {@code registry.keyed(name)}). A
 *     family's name must not be a semaphore's. On Redis, the limit a key's semaphore is created with (the stored
 *     one wins while it exists).</td></tr>
 * <tr><td>{@code sema.keyed.<name>.max-keys}</td><td>100000</td><td>The most keys live at once (on Redis, in this
 *     process); a request for one more is refused ({@code TooManyKeysException}: 503, or the fallback).</td></tr>
 * <tr><td>{@code sema.keyed.<name>.max-permits}</td><td>permits</td><td>The ceiling of a key's limit; local
 *     families only (on Redis it stops the start).</td></tr>
 * <tr><td>{@code sema.keyed.<name>.parent}</td><td>none</td><td>A semaphore ({@code api}) or a partition of one
 *     ({@code api/batch}), local or Redis, whose permits every key's permits also hold.</td></tr>
 * <tr><td>{@code sema.keyed.<name>.redis}</td><td>false</td><td>{@code true}: the family
 *     {@code RedisSemaphores.keyed(name)} builds, whose key {@code k} is the {@code RedisSemaphore} named
 *     {@code <name>:k}, its limit shared by every process on the same Redis. Keys are
 *     {@code String.valueOf(key)}; one that is empty or contains a brace is refused ({@code sema.web}: 400 naming
 *     it; {@code @WithPermits}: {@code IllegalArgumentException}). It works from the moment Redis is reached, as
 *     the Redis semaphores do.</td></tr>
 * <tr><td>{@code sema.keyed.<name>.lease}</td><td>30s</td><td>Redis only: how long a key's grant lives unless
 *     renewed (100ms to 1d).</td></tr>
 * <tr><td>{@code sema.keyed.<name>.expire-when-idle}</td><td>10m</td><td>Redis only: a key's semaphore
 *     disappears from Redis after this long unused (1s to 365d).</td></tr>
 * <tr><td>{@code sema.keyed.<name>.leak-detection}</td><td>off</td><td>As for a semaphore; local families
 *     only.</td></tr>
 * <tr><td>{@code sema.web.keyed}</td><td>none</td><td>A keyed family each limited request also takes one permit
 *     of, for its key: the key's permit first, then the semaphore's (when {@code sema.web.semaphore} is set; it may
 *     be left out), both within {@code max-wait}, both held until the response is complete.</td></tr>
 * <tr><td>{@code sema.web.key}</td><td>none</td><td>Where a request's key comes from: {@code header:NAME},
 *     {@code principal} or {@code remote-address}. A request without one is answered 400 naming what it
 *     lacks.</td></tr>
 * </tbody>
 * </table>
 * A name that is not lower-case letters, digits and dashes is written in brackets:
 * {@code sema.semaphores[Partner.API].permits=3}. The registry keeps the names in configuration order.
 *
 * <h2>What the application gets</h2>
 * <ul>
 * <li>{@link dev.sema.spring.SemaphoreRegistry}: a bean with every semaphore (or the application's own registry
 *     bean, which every part below then uses).</li>
 * <li>{@link dev.sema.spring.WithPermits} on the methods of Spring beans, blocking or returning a
 *     {@code CompletionStage}, on a semaphore, a partition of one, or a keyed family with a SpEL {@code key}; {@link dev.sema.spring.PermitUnavailableException} when the permits do not come in
 *     time (or Redis cannot be reached), or the method's {@code fallback}.</li>
 * <li>Spring MVC: {@code PermitUnavailableException} becomes 503 with {@code Retry-After} and a JSON body naming
 *     the semaphore ({@code {"status":503,"error":"Service Unavailable","semaphore":"db","permits":1,"message":
 *     "...","path":"/orders"}}); so does a request the {@code sema.web} filter refuses.</li>
 * <li>Spring WebFlux ({@link dev.sema.spring.SemaWebFluxAutoConfiguration}): the same 503 for a
 *     {@code PermitUnavailableException}, which a {@code @WithPermits} method returning {@code Mono} or {@code Flux}
 *     signals; and {@code sema.web} as a {@code WebFilter} with the same properties, its requests queueing for
 *     permits without holding a thread (this needs sema-reactor).</li>
 * <li>Micrometer (sema-micrometer on the class path): every registry semaphore and keyed family bound with
 *     {@code SemaphoreMetrics}, e.g. {@code sema_permits_limit{name="db"}} at {@code /actuator/prometheus}.</li>
 * <li>The actuator: the {@code semaphores} endpoint ({@link dev.sema.spring.SemaphoresEndpoint}; GET all, GET
 *     one, POST {@code {"permits": 20}}; a partitioned semaphore with each partition's share, held permits,
 *     guarantee and queue; a keyed family with its live keys, {@code maxKeys} and permits per key, and
 *     {@code "redis": true} for one on Redis) and the {@code semaphores} health contributor (DOWN naming each Redis
 *     semaphore whose state cannot be read, and each keyed family on Redis not open yet).</li>
 * </ul>
 *
 * <h2>Startup and shutdown</h2>
 * A configuration mistake (a negative or missing {@code permits}, {@code max-permits} below it, an unknown
 * {@code fairness}, {@code redis: true} with no Redis, {@code sema.web.semaphore} naming no semaphore, a
 * {@code @WithPermits} naming none or a {@code fallback} that does not fit, {@code sema.web} on a semaphore whose
 * {@code max-permits} is 0, partitions' shares out of range or adding up to more than 1, a partition that
 * {@code @WithPermits(partition)} or {@code sema.web.partition-*} names but the semaphore lacks, an unknown keyed
 * family or parent, a {@code @WithPermits(key)} on a semaphore or none on a family, {@code max-permits} or
 * {@code leak-detection} on a keyed family on Redis, ...) stops the application at startup, and Spring Boot's
 * failure report names the property (or annotation), the value and where it was set. A Redis that cannot be
 * reached does not, unless {@code sema.redis.fail-fast} is set: see above. When the context closes, once the web
 * server has stopped taking requests: the adaptive limits are closed, then the keyed families (on Redis: this
 * process's use of them), then the local semaphores (their waiters fail; held permits can still be released), then
 * the Redis connection the starter opened, which releases the permits this process still holds and leaves the Redis
 * semaphores and keys open for the rest of the fleet.
 *
 * <h2>Virtual threads</h2>
 * With {@code spring.threads.virtual.enabled=true}, requests that wait in the filter or in a {@code @WithPermits}
 * method park their virtual thread inside the semaphore; nothing in the starter holds a monitor around a wait.
 *
 * <h2>The auto-configurations</h2>
 * {@link dev.sema.spring.SemaAutoConfiguration} (properties, registry, {@code @WithPermits}),
 * {@link dev.sema.spring.SemaRedisAutoConfiguration}, {@link dev.sema.spring.SemaWebAutoConfiguration},
 * {@link dev.sema.spring.SemaMetricsAutoConfiguration}, {@link dev.sema.spring.SemaActuatorAutoConfiguration},
 * {@link dev.sema.spring.SemaHealthAutoConfiguration}: each can be excluded on its own.
 */
package dev.sema.spring;
