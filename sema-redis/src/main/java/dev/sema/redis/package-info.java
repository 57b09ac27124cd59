/**
 * The distributed semaphore: {@link dev.sema.redis.RedisSemaphores} connects to Redis (with Lettuce)
 * and builds {@link dev.sema.redis.RedisSemaphore}s whose state lives in Redis and is shared by every
 * process that builds the same name; their permits are {@link dev.sema.redis.RedisPermit}s, with a
 * lease and a fencing token.
 *
 * <h2>Connecting</h2>
 * <ul>
 *   <li>{@link dev.sema.redis.RedisSemaphores#connect(String)}: a standalone Redis
 *       ({@code redis://host:port}, {@code rediss://} for TLS), or a Redis watched by Sentinel, in Lettuce's
 *       form {@code redis-sentinel://host:port[,host:port]/[db]#masterName}: the client asks the sentinels
 *       for the master and follows a failover. A failover with Redis's asynchronous replication can lose
 *       the last writes the old master acknowledged (a grant, a release); leases and fencing tokens bound
 *       the damage (see below), and the semaphore's counts may be off until those leases end.
 *   <li>{@link dev.sema.redis.RedisSemaphores#connectCluster(String)}: a Redis Cluster, from one or more
 *       seed nodes ({@code redis://h1:7000,h2:7000}).
 *   <li>{@link dev.sema.redis.RedisSemaphores#using}: a Lettuce {@code RedisClient} or
 *       {@code RedisClusterClient} the caller owns and shuts down.
 * </ul>
 * Builder options: {@code permits}, {@code maxPermits}, {@code lease}, {@code createIfMissing},
 * {@code expireWhenIdle}, {@code replicas} and {@code partition} (see {@link dev.sema.redis.RedisSemaphore.Builder}).
 *
 * <h2>Design</h2>
 * <p>Semaphore {@code N} is four keys sharing the hash tag {@code {N}}: {@code sem:{N}:meta} (one binary
 * string, schema version 4: limit, ceiling, permits used, last fencing token, queue counter, closed flag,
 * idle expiry, the next deadline and the queue length), {@code holders} (id to a grant's permits and
 * token, or to a queued request and the handle to wake), {@code leases} (id to deadline: a grant's lease,
 * a queued request's liveness) and {@code queue} (waiter id in arrival order). Serving a request rewrites
 * its entry and its deadline in place, and one scan ends both expired leases and dead waiters. Every
 * operation is one Lua script, atomic in Redis: ACQUIRE, RELEASE, SPLIT, MERGE, FORGET, CANCEL, RENEW,
 * SET_LIMIT, CLOSE and STATUS. Expired leases and dead waiters are ended (at most 64 per call) by
 * the next script that finds the stored next deadline reached, and the queue is served by every script
 * that finds it non-empty, so a crashed process's permits come back through the next script of anyone,
 * and the waiters' own heartbeats make sure there is one. Deadlines are taken from Redis's {@code TIME}
 * only; a client measures durations with {@code System.nanoTime()} and never compares its clock with
 * Redis's.
 *
 * <p>What one operation costs Redis is the fleet's budget, so the common cases are short: an uncontended
 * ACQUIRE reads the meta value, the clock, writes the grant, its lease and the meta fields it changed (6
 * commands, EVALSHA included); a RELEASE with nobody queued reads the meta value and the grant, deletes the
 * grant and its lease and writes the permits used, without reading the clock (6). Under contention the two
 * common cases are short too: an ACQUIRE that must queue writes its entry, its place in the queue, its
 * deadline and the meta fields it changed (7); a RELEASE that hands its permits to the head of the queue
 * rewrites the head's entry and deadline in place and sends one message (13). These fast paths run before
 * the shared functions of {@code common.lua} are even defined, write only the bytes of the meta value that
 * change ({@code SETRANGE}), and every count they give Redis is already text. A call sends only the
 * operation's arguments (an acquire four, a whole release one): a handle that finds the semaphore missing
 * (the reply ERR_MISSING, before anything changed) sends the call again with the creation argument. A
 * semaphore of an older schema (1 or 2, a hash; 3, queued requests in keys of their own) is upgraded in
 * place: a script that meets one replies ERR_UPGRADE before it changes anything, and the client runs
 * {@code upgrade.lua}, which declares the older keys, then the script again. A client of an older schema
 * then refuses the semaphore with a clear error rather than serve the queue out of order, so a fleet
 * upgrades every process of a semaphore's users before they share it again.
 *
 * <p>A partitioned semaphore (API.md §11a, {@link dev.sema.redis.RedisSemaphore.Builder#partition}) is the
 * same four keys: its {@code queue} holds every partition's requests, each partition's under a score of its own
 * and in arrival order within it (the parent's own requests under the last), and its meta value is of schema 5:
 * schema 4's fields with each partition's queue length, held permits and guarantee (cached for the limit they
 * were computed for) beside the fields they change with, then the partitions as declared,
 * each share as the decimal it was written as, so that a script computes {@code floor(share × limit)} exactly
 * as the local engine does. Its scripts are those of an unpartitioned semaphore with {@code partitions.lua}
 * after {@code common.lua}, which serves every partition's queue by the local engine's rules (guarantee first,
 * then priority, work-conserving, under the one limit), and fast paths of their own ({@code p_*.lua}) for the
 * common cases: nobody waiting, a request joining a queue that is not empty, a release with every waiter in one
 * partition's queue. An unpartitioned semaphore runs the same scripts as before, and pays nothing for
 * partitions; through a partition, an uncontended acquire + release runs the same commands, with one more
 * argument (the request's partition) and a few more bytes to write.
 *
 * <p>The queue is served in strict FIFO order inside Redis: a release hands the permits to the waiters
 * that fit and sends one message to each process that was granted (channel
 * {@code sem:{N}:wake:<handle>}), which completes the waiting future without another round trip. A lost
 * message is made good by the waiter's next heartbeat (RENEW reports it as granted). Uncontended,
 * an acquire is one round trip (EVALSHA ACQUIRE) and a release is one (EVALSHA RELEASE).
 *
 * <p>Every request has an id made of its handle's id (the process's random id and the handle's number)
 * and a counter; the id names the waiter
 * while queued and the grant once held, and every script is idempotent per id, because Lettuce re-sends
 * a command that was in flight when its connection dropped. Operations that change what a grant holds
 * (releasing part, split, merge) move it to a fresh grant id, so that a re-sent script sees it already
 * ran. A grant that races with a cancellation is released by CANCEL itself (WAS_GRANTED_RELEASED); a
 * wake-up for a request this process has settled already (granted by a heartbeat's reply, or withdrawn
 * with its CANCEL sent) is ignored. A grant pushed by a wake-up message is renewed on the usual schedule,
 * from a conservative estimate of when Redis set its lease: no extra RENEW.
 *
 * <h2>Where this differs from the starting design</h2>
 * <ul>
 *   <li>One script per operation: {@code prelude.lua} (the meta value, read and written with Redis's
 *       {@code struct} library), the operation's fast path, the shared {@code common.lua}, then the rest of
 *       the operation; loaded with EVALSHA and an EVAL fallback on NOSCRIPT (no Redis Functions, so Redis
 *       6.2 works).
 *   <li>STATUS ends expired leases and serves the queue like every other script, so counts include
 *       permits that came back by expiry; it therefore runs on the master, not on replicas.
 *   <li>No safety {@code PEXPIRE} on the keys by default: entries leave as leases and waiters end, and the
 *       meta value is the semaphore's persistent configuration. With
 *       {@link dev.sema.redis.RedisSemaphore.Builder#expireWhenIdle} (stored in the meta value at creation),
 *       every script ends by setting each key to expire that long after the last lease or waiter deadline
 *       still ahead, so a semaphore nobody holds or waits on disappears whole.
 *   <li>A request above the current limit but within the ceiling waits (no ERR_EXCEEDS_LIMIT), as
 *       {@link dev.sema.Semaphore} requires; one above the ceiling is an
 *       {@link java.lang.IllegalArgumentException}.
 *   <li>Only {@link dev.sema.Fairness#FIFO}; no barging mode, no shorter first lease for grants made while
 *       the waiter was queued. The durable mode is opt-in per handle
 *       ({@link dev.sema.redis.RedisSemaphore.Builder#replicas}): {@code WAIT} after each grant on the
 *       handle's own connection, after renewing a grant another process's release made for it, and after
 *       each renewal, which extends the local deadlines only once the replicas have it. On Redis Cluster
 *       every grant is renewed, and every renewal runs, on the connection to the slot's master, which the
 *       {@code WAIT} then follows.
 *   <li>One wake-up channel per handle. Standalone Redis: {@code PUBLISH}. Redis Cluster: sharded pub/sub
 *       ({@code SPUBLISH}, {@code SSUBSCRIBE} on the semaphore's master) when every master runs Redis 7 or
 *       newer at connect time, else {@code PUBLISH}, which the cluster broadcasts to every node. The
 *       choice is the subscriber's: a handle listening with {@code SSUBSCRIBE} has an id ending in
 *       {@code s}, and every script sends to each handle the way that handle listens.
 *   <li>The waiter time-to-live is the lease, at most 10 s; waiters heartbeat every third of it, at most
 *       every second. A waiter whose entry is gone (reaped, or lost in a restart) queues again, at the
 *       back, unless the semaphore was closed.
 *   <li>{@code awaitIdle} waiters are queue entries of their own kind, served when they reach the head
 *       and nothing is held; CLOSE leaves them queued. One whose completion message is lost asks again
 *       at its next heartbeat, and then also waits for work that arrived in between.
 *   <li>A semaphore whose meta key is missing is created again from the builder's values by the next
 *       script (its other keys are cleared so the counts stay exact), at the cost of one more round trip
 *       (the call that found it missing, then the same call with the builder's values), unless the builder
 *       said {@code createIfMissing(false)}; a key of the wrong type or schema version is reported.
 *   <li>No extra RENEW when the pub/sub connection reconnects: a waiter's next heartbeat, within a
 *       second, reports any grant whose message was lost meanwhile.
 *   <li>Lease loss is reported through {@link dev.sema.redis.RedisPermit#leaseLost()} rather than a
 *       listener.
 * </ul>
 *
 * <h2>Redis versions and Redis Cluster</h2>
 * Redis 6.2 and 7.x: the scripts use only commands of Redis 6.2 or older, besides {@code SPUBLISH}, which
 * they send only to handles of a cluster whose masters all ran Redis 7 or newer when the handle's
 * {@link dev.sema.redis.RedisSemaphores} connected; its failure is ignored (a node of an older version
 * must never fail an operation: the handle's heartbeat reports the outcome instead). Each
 * script touches only the keys it is passed (four; six for {@code upgrade.lua}), which share the hash
 * tag {@code {N}}, and publishes only to {@code sem:{N}:wake:*} channels, which share it too: in Redis
 * Cluster one semaphore is one slot, so
 * each operation runs on one master, without CROSSSLOT errors, and Lettuce routes it by its first key.
 * A script is loaded on a master by the first operation that reaches it there (EVALSHA, then EVAL on
 * NOSCRIPT, routed to the same master). When a resharding moves a semaphore's slot, Lettuce follows the
 * redirection, and Redis 7 ends the shard subscriptions of that slot on the old master: the handle then
 * subscribes again, on the new master. A subscription lost without notice (its master failed) is found
 * by the next heartbeat that reports a grant whose message did not arrive (within a second), which
 * subscribes again too.
 *
 * <h2>Fencing tokens</h2>
 * A token is {@code max(last + 1, server time in microseconds)}: strictly increasing while the meta key
 * lives, and still increasing after a restart or failover rolled it back, provided the new server's
 * clock is not behind the old one's by more than the failover took. Run Redis hosts with a slewing
 * time service (chrony): a clock step forward ends leases early, a step back delays expiry and weakens
 * that floor. Split parts share their grant's token; a merge keeps the larger one.
 *
 * <h2>Failure model</h2>
 * A holder that crashes frees its permits when its lease ends. A process judges its own leases on its
 * monotonic clock, from when the request that set each was sent, with a tenth of the lease as margin, and
 * {@link dev.sema.redis.RedisPermit#leaseLost()} completes the instant that local deadline passes, before
 * Redis can hand the permits on; a grant that reaches the process after it (a partition, a stall, a slow
 * WAIT) is confirmed with Redis before it is handed over, or never handed over (see <em>Late grants</em> in
 * {@link dev.sema.redis.RedisSemaphore}). A holder paused longer than that margin keeps working while its
 * permits are handed on: the limit is exceeded in reality until it runs again and notices; only the fencing
 * token, checked by the protected resource, keeps such a holder from doing harm. Grants not yet replicated
 * when a replica is promoted are lost the same way. If Redis is unreachable, operations fail at once (or
 * after the command timeout) with {@link dev.sema.redis.RedisSemaphoreException}; waiters already queued
 * keep waiting and are kept alive again when Redis is back. A connection that brings no reply for a command
 * timeout while commands wait (a half-open connection) is closed and opened again. The timing assumptions,
 * what a process sees for each network fault, and the chaos run that checks all of it are in the project's
 * {@code docs/RELIABILITY.md}.
 */
package dev.sema.redis;
