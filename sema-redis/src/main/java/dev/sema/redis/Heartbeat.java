package dev.sema.redis;

import io.lettuce.core.api.StatefulRedisConnection;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The renewal heartbeat of one {@link LettuceSemaphore} handle: on the timer thread it checks the local
 * lease deadlines and, when a grant is due (a third of its lease after it was last renewed) or waiters
 * are queued, sends one RENEW for all of them, then applies the answer.
 *
 * <p>Rules kept here (the façade's L1-L4 are in {@link LettuceSemaphore}):
 * <ul>
 * <li>H1: at most one RENEW is in flight ({@link #inFlight}); a tick that finds one skips.</li>
 * <li>H2: a renewed grant's local deadline is measured from when the RENEW was sent (L3), and only for
 *     the epoch the grant had then (L4).</li>
 * <li>H3: a waiter Redis reports granted is completed as if woken (a lost message is healed); one it
 *     reports gone is queued again with the same id (a wake-up for it is then confirmed before it is
 *     trusted: L12), or failed when the semaphore is closed.</li>
 * <li>H4: CANCELs and RELEASEs whose reply was lost (L6) are sent again on every tick until Redis
 *     answers; once the handle left, its leave() has sent them a last time instead (L11).</li>
 * <li>H5: a permit's {@code leaseLost()} completes when its local deadline passes, not at the next tick:
 *     every check of the deadlines (a tick, or a check scheduled by {@link #watch}) ends by watching the
 *     earliest deadline still ahead, and a deadline that would pass before the next tick gets a check of
 *     its own at that instant. Checks run on a virtual thread, so a {@code leaseLost()} callback never holds
 *     up the timer that renews every lease.</li>
 * <li>H6: with {@code replicas(n, timeout)}, a renewal moves the grants' local deadlines only once WAIT reports
 *     {@code n} replicas have it (L7 for renewals). A failover promotes a replica, which judges a lease by
 *     the last renewal it received: a holder that goes on renewing on an old primary that stays up (cut off
 *     from its Sentinels, or replaced by a forced failover) must not believe in renewals that no replica
 *     has, or the new primary ends its lease and grants its permits while it still works. On Redis Cluster
 *     the RENEW and its WAIT go to the slot's master on one connection (RedisSemaphores R1).</li>
 * </ul>
 */
final class Heartbeat {
    private static final System.Logger LOG = System.getLogger(Heartbeat.class.getName());

    private final LettuceSemaphore semaphore;
    private final long leaseNanos;
    private final long marginNanos;
    private final long renewPeriodNanos;
    private final long tickNanos;
    private final AtomicBoolean inFlight = new AtomicBoolean();
    /** H5: when the scheduled deadline check runs (nanoTime), or NONE. */
    private final AtomicLong watchFor = new AtomicLong(NONE);
    private static final long NONE = Long.MAX_VALUE;

    Heartbeat(LettuceSemaphore semaphore, long leaseNanos, long marginNanos, long renewPeriodNanos, long tickNanos) {
        this.semaphore = semaphore;
        this.leaseNanos = leaseNanos;
        this.marginNanos = marginNanos;
        this.renewPeriodNanos = renewPeriodNanos;
        this.tickNanos = tickNanos;
    }

    /** A grant as sent in one RENEW: the permit, the grant id Redis knows, and the permit's epoch then (L4). */
    record HeldSnapshot(LettucePermit permit, String id, long epoch) {
    }

    /** Checks local lease deadlines, then renews grants and heartbeats waiters (one RENEW) when due. */
    void tick() {
        try {
            if (semaphore.hasLeft()) {
                return;
            }
            resendLost(); // keeps H4
            semaphore.owner().execute(this::checkDeadlines); // keeps H5
            long now = System.nanoTime();
            boolean due = false;
            for (LettucePermit p : semaphore.held.values()) {
                // Renew a grant a third of the lease after its lease was last set (deadline = sent + lease - margin).
                due |= p.deadline() - now <= leaseNanos - marginNanos - renewPeriodNanos + tickNanos / 2;
            }
            if (!(due || !semaphore.waiting.isEmpty()) || semaphore.renewalsSuspended) {
                return;
            }
            if (!inFlight.compareAndSet(false, true)) {
                return; // keeps H1
            }
            List<HeldSnapshot> grants = new ArrayList<>();
            List<String> grantIds = new ArrayList<>();
            for (LettucePermit p : semaphore.held.values()) {
                HeldSnapshot s = p.snapshot();
                if (s != null) {
                    grants.add(s);
                    grantIds.add(s.id());
                }
            }
            List<Pending<?>> waiters = new ArrayList<>();
            List<String> waiterIds = new ArrayList<>();
            for (Pending<?> p : semaphore.waiting.values()) {
                if (p.isWaiting()) {
                    waiters.add(p);
                    waiterIds.add(p.id);
                }
            }
            if (grants.isEmpty() && waiters.isEmpty()) {
                inFlight.set(false);
                return;
            }
            long sent = System.nanoTime();
            if (semaphore.replicas() > 0 && !grants.isEmpty()) {
                // H6: the renewal counts once WAIT says enough replicas have it (H1 holds meanwhile). On Redis
                // Cluster it runs on its slot's master's connection, which WAIT follows (RedisSemaphores R1).
                RedisSemaphores owner = semaphore.owner();
                CompletableFuture<Durable> renewal = owner.isCluster()
                        ? owner.onMaster(semaphore.protocol().key(),
                                node -> durably(semaphore.protocol().on(node), node, grantIds, waiterIds))
                        : durably(semaphore.protocol(), null, grantIds, waiterIds);
                renewal.whenComplete((d, e) -> {
                    try {
                        renewed(grants, waiters, sent, d == null ? null : d.renewed(), e, d != null && d.durable());
                    } finally {
                        inFlight.set(false);
                    }
                });
                return;
            }
            semaphore.protocol().renew(semaphore.handleId(), semaphore.leaseMs(), semaphore.waiterTtlMs(), grantIds,
                    waiterIds).whenComplete((r, e) -> {
                        try {
                            renewed(grants, waiters, sent, r, e, true);
                        } finally {
                            inFlight.set(false);
                        }
                    });
        } catch (RuntimeException e) {
            inFlight.set(false);
            LOG.log(System.Logger.Level.WARNING, semaphore.describe() + ": renewal tick failed", e);
        }
    }

    /** A renewal's reply, and whether WAIT reported enough replicas have it (H6). */
    private record Durable(Protocol.Renewed renewed, boolean durable) {
    }

    /**
     * H6: RENEW through {@code on}, then WAIT on {@code node} (null: the command connection), which counts only if
     * no connection dropped in between (RedisSemaphores R2).
     */
    private CompletableFuture<Durable> durably(Protocol on, StatefulRedisConnection<String, String> node,
            List<String> grantIds, List<String> waiterIds) {
        long links = semaphore.owner().links(node);
        return on.renew(semaphore.handleId(), semaphore.leaseMs(), semaphore.waiterTtlMs(), grantIds, waiterIds)
                .thenCompose(r -> semaphore.owner().waitForReplicas(node, semaphore.replicas(),
                        semaphore.replicasTimeoutMillis(), links).handle((acked, failed) -> new Durable(r,
                                failed == null && acked >= semaphore.replicas())));
    }

    /** H5: marks the permits whose deadline passed as lost, then watches the earliest deadline still ahead. */
    void checkDeadlines() {
        long now = System.nanoTime();
        long earliest = NONE;
        for (LettucePermit p : semaphore.held.values()) {
            if (p.checkDeadline(now) && (earliest == NONE || p.deadline() - earliest < 0)) {
                earliest = p.deadline();
            }
        }
        if (earliest != NONE) {
            watch(earliest);
        }
    }

    /**
     * H5: makes sure the deadlines are checked when {@code deadline} passes: if it passes before the next
     * tick could see it, and no check is scheduled at or before it, schedules one at that instant.
     */
    void watch(long deadline) {
        long delay = deadline - System.nanoTime();
        if (delay > tickNanos + tickNanos / 2) {
            return; // a tick sees it coming, and watches it then
        }
        for (;;) {
            long w = watchFor.get();
            if (w != NONE && w - deadline <= 0) {
                return; // an earlier check watches the next deadline when it runs
            }
            if (watchFor.compareAndSet(w, deadline)) {
                break;
            }
        }
        try {
            semaphore.owner().timer.schedule(() -> {
                watchFor.compareAndSet(deadline, NONE);
                semaphore.owner().execute(this::checkDeadlines);
            }, Math.max(0, delay), TimeUnit.NANOSECONDS);
        } catch (RejectedExecutionException leaving) {
            watchFor.compareAndSet(deadline, NONE);
        }
    }

    /** Sends again the CANCELs and RELEASEs whose reply was lost; each leaves its set once Redis answers. */
    private void resendLost() {
        if (semaphore.renewalsSuspended) {
            return;
        }
        for (String id : semaphore.cancelsDue) {
            semaphore.resendCancel(id);
        }
        for (String id : semaphore.releasesDue) {
            semaphore.resendRelease(id);
        }
    }

    /** Applies a RENEW's reply; {@code durable}: the renewal may move the grants' deadlines (H6). */
    private void renewed(List<HeldSnapshot> grants, List<Pending<?>> waiters, long sent, Protocol.Renewed r,
            Throwable e, boolean durable) {
        if (e != null) {
            Throwable cause = RedisSemaphores.unwrap(e);
            if (cause instanceof RedisSemaphoreException refused) {
                // The semaphore is gone (and may not be created) or its key is corrupt: nothing here can be kept.
                for (HeldSnapshot s : grants) {
                    s.permit().lost(s.epoch(), refused.getMessage());
                }
                for (Pending<?> p : waiters) {
                    p.semaphore.fail(p, refused); // L10: through the view that made it
                }
                return;
            }
            LOG.log(System.Logger.Level.DEBUG, () -> semaphore.describe() + ": renewal failed (retried; leases are"
                    + " lost only when their local deadline passes)", e);
            return;
        }
        Set<String> lost = new HashSet<>(r.lost());
        for (HeldSnapshot s : grants) {
            if (lost.contains(s.id())) {
                s.permit().lost(s.epoch(), "Redis no longer holds grant " + s.id()
                        + " (its lease ended, or the data was lost)");
            } else if (durable) {
                s.permit().renewed(s.epoch(), sent + leaseNanos - marginNanos); // keeps H2
            }
        }
        if (!durable) {
            LOG.log(System.Logger.Level.DEBUG, () -> semaphore.describe() + ": a renewal did not reach "
                    + semaphore.replicas() + " replicas in time; the leases keep their deadlines (H6)");
        }
        if (!r.granted().isEmpty()) {
            semaphore.owner().subscribeAgain(semaphore.channel()); // a wake-up may have been lost with the subscription
        }
        Set<String> done = new HashSet<>();
        for (Protocol.Grant g : r.granted()) {
            done.add(g.id());
            Pending<?> p = semaphore.waiting.get(g.id());
            if (p != null) {
                p.queued(sent); // it was granted through the queue
                p.semaphore.granted(p, g.token(), sent); // keeps H3
            }
        }
        if (r.closed()) {
            semaphore.sawClosed();
        }
        for (String id : r.gone()) {
            done.add(id);
            Pending<?> p = semaphore.waiting.get(id);
            if (p == null || !p.isWaiting()) {
                continue;
            }
            if (r.closed() && !p.idle) {
                p.semaphore.fail(p, p.semaphore.closedFailure(p.what()));
            } else {
                p.semaphore.sendAcquire(p, true); // reaped or lost with the data: queue again (at the back), same id
            }
        }
        for (Pending<?> p : waiters) {
            if (!done.contains(p.id)) {
                p.queued(sent);
            }
        }
    }
}
