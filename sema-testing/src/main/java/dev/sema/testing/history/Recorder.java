package dev.sema.testing.history;

import dev.sema.testing.history.Event.Declare;
import dev.sema.testing.history.Event.Fail;
import dev.sema.testing.history.Event.Fault;
import dev.sema.testing.history.Event.Final;
import dev.sema.testing.history.Event.Invoke;
import dev.sema.testing.history.Event.Lifecycle;
import dev.sema.testing.history.Event.Lost;
import dev.sema.testing.history.Event.Ok;
import dev.sema.testing.history.Event.Outcome;
import dev.sema.testing.history.Event.Release;
import dev.sema.testing.history.Event.Sample;
import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Records what one process does, for code that drives semaphores in a test; the scheduler uses one too,
 * under its own name, for what it does to others. Thread-safe: each call writes one line through the
 * {@link HistoryWriter}, stamped with the time of the call.
 *
 * <h2>Examples</h2>
 * {@snippet :
 * long req = rec.invoke("s1", 2, "acquire");
 * Permit p;
 * try {
 *     p = semaphore.acquire(2);
 * } catch (InterruptedException e) {
 *     rec.fail(req, Outcome.INTERRUPTED, e.getMessage());
 *     throw e;
 * }
 * rec.ok(req, ((RedisPermit) p).fencingToken());      // after the acquire returned
 * ((RedisPermit) p).leaseLost().thenRun(() -> rec.lost(req));
 * // ... work ...
 * rec.release(req);                                    // before close(): the belief ends here
 * p.close();
 * }
 * Record {@code ok} only once the permit is in hand and {@code release} before calling {@code close()}:
 * the belief the history shows then lies within the time the permits were held, and an overlap the
 * checker finds is a real one.
 */
public final class Recorder {

    private final HistoryWriter writer;
    private final String process;
    /** Request ids, unique within this recorder: one recorder per process. */
    private final AtomicLong lastRequest = new AtomicLong();

    /**
     * Creates a recorder for a process.
     *
     * @param writer  where its lines go
     * @param process the process's name, one token without whitespace
     */
    public Recorder(HistoryWriter writer, String process) {
        this.writer = Objects.requireNonNull(writer, "writer");
        this.process = HistoryFormat.name(process);
    }

    /**
     * Returns the name of the process this recorder writes for.
     *
     * @return the process's name
     */
    public String process() {
        return process;
    }

    /** Records that the process began. */
    public void start() {
        writer.write(t -> new Lifecycle(t, process, Lifecycle.Kind.START));
    }

    /** Records that the process ends cleanly: call it after every request has its outcome. */
    public void exit() {
        writer.write(t -> new Lifecycle(t, process, Lifecycle.Kind.EXIT));
    }

    /**
     * Declares a semaphore of the run, with the limit the checker holds it to.
     *
     * @param semaphore its name
     * @param limit     its limit
     * @param lease     its lease
     */
    public void declare(String semaphore, long limit, Duration lease) {
        writer.write(t -> new Declare(t, process, semaphore, limit, lease.toMillis()));
    }

    /**
     * Records a request about to be sent.
     *
     * @param semaphore the semaphore
     * @param permits   how many permits
     * @param kind      what kind of request (acquire, timed, try, async...)
     * @return the request's id, for its outcome and end
     */
    public long invoke(String semaphore, long permits, String kind) {
        long req = lastRequest.incrementAndGet();
        writer.write(t -> new Invoke(t, process, req, semaphore, permits, kind));
        return req;
    }

    /**
     * Records that a request was granted; call it once the permit is in hand.
     *
     * @param req   the request
     * @param token the grant's fencing token
     */
    public void ok(long req, long token) {
        writer.write(t -> new Ok(t, process, req, token));
    }

    /**
     * Records that a request failed.
     *
     * @param req     the request
     * @param outcome how
     * @param reason  a short reason, for example the exception's message
     */
    public void fail(long req, Outcome outcome, String reason) {
        writer.write(t -> new Fail(t, process, req, outcome, reason));
    }

    /**
     * Records that a request failed.
     *
     * @param req     the request
     * @param outcome timeout, unavailable, closed, cancelled, interrupted or error
     * @param reason  a short reason, for example the exception's message
     */
    public void fail(long req, String outcome, String reason) {
        fail(req, Outcome.of(outcome), reason);
    }

    /**
     * Records that the permit of a request lost its lease ({@code leaseLost()} completed).
     *
     * @param req the request that granted the permit
     */
    public void lost(long req) {
        writer.write(t -> new Lost(t, process, req));
    }

    /**
     * Records that the permit of a request is being released; call it just before {@code close()}.
     *
     * @param req the request that granted the permit
     */
    public void release(long req) {
        writer.write(t -> new Release(t, process, req));
    }

    /**
     * Records that the scheduler killed a process with SIGKILL; call it once the process is known dead.
     *
     * @param target the process killed
     */
    public void kill(String target) {
        writer.write(t -> new Lifecycle(t, target, Lifecycle.Kind.KILL));
    }

    /**
     * Records that the scheduler paused a process with SIGSTOP.
     *
     * @param target the process paused
     */
    public void stop(String target) {
        writer.write(t -> new Lifecycle(t, target, Lifecycle.Kind.STOP));
    }

    /**
     * Records that the scheduler resumed a process with SIGCONT.
     *
     * @param target the process resumed
     */
    public void cont(String target) {
        writer.write(t -> new Lifecycle(t, target, Lifecycle.Kind.CONT));
    }

    /**
     * Records that a fault begins.
     *
     * @param kind   partition, latency, reset, halfopen, sigstop, sigkill, redis-restart, script-flush...
     * @param target what it hits
     */
    public void faultBegin(String kind, String target) {
        writer.write(t -> new Fault(t, process, kind, target, Fault.Phase.BEGIN));
    }

    /**
     * Records that a fault ended.
     *
     * @param kind   as given to {@link #faultBegin(String, String)}
     * @param target as given to {@link #faultBegin(String, String)}
     */
    public void faultEnd(String kind, String target) {
        writer.write(t -> new Fault(t, process, kind, target, Fault.Phase.END));
    }

    /**
     * Records a semaphore's counts read from Redis during the run; call it when the reply arrived.
     *
     * @param semaphore the semaphore
     * @param used      permits held
     * @param queued    requests queued
     */
    public void sample(String semaphore, long used, long queued) {
        writer.write(t -> new Sample(t, process, semaphore, used, queued));
    }

    /**
     * Records a semaphore's counts read from Redis after the run.
     *
     * @param semaphore the semaphore
     * @param used      permits held
     * @param queued    requests queued
     */
    public void finalCounts(String semaphore, long used, long queued) {
        writer.write(t -> new Final(t, process, semaphore, used, queued));
    }
}
