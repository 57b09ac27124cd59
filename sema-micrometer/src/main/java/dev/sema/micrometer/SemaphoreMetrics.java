package dev.sema.micrometer;

import dev.sema.KeyedSemaphore;
import dev.sema.Rejection;
import dev.sema.Semaphore;
import dev.sema.SemaphoreListener;
import dev.sema.internal.Partitioned;
import dev.sema.internal.Partitioned.PartitionState;
import dev.sema.internal.StateSource;
import dev.sema.internal.StateSource.State;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tag;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.TimeGauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.LongConsumer;
import java.util.function.Predicate;
import java.util.function.Supplier;
import java.util.function.ToDoubleFunction;

/**
 * The meters of one {@link Semaphore}, local or on Redis, or of one {@link KeyedSemaphore} family, bound to any
 * number of Micrometer registries.
 *
 * {@snippet :
 * Semaphore db = Semaphore.builder().name("db").permits(10).build();
 * SemaphoreMetrics metrics = new SemaphoreMetrics(db, Tags.of("service", "orders"));
 * metrics.bindTo(registry);      // registers the meters, starts listening
 * // ... later, when the semaphore is retired:
 * metrics.close();               // stops listening, removes the meters
 * }
 *
 * <p>Every meter is tagged {@code name} = the semaphore's name, plus the given tags:
 * <table class="striped">
 * <caption>Meters</caption>
 * <thead><tr><th>meter</th><th>type</th><th>value</th></tr></thead>
 * <tbody>
 * <tr><td>{@code sema.permits.limit}</td><td>gauge</td><td>{@code permits()}</td></tr>
 * <tr><td>{@code sema.permits.max}</td><td>gauge</td><td>{@code maxPermits()}</td></tr>
 * <tr><td>{@code sema.permits.available}</td><td>gauge</td><td>{@code availablePermits()}</td></tr>
 * <tr><td>{@code sema.permits.used}</td><td>gauge</td><td>permits held by open {@code Permit}s</td></tr>
 * <tr><td>{@code sema.queue.waiters}</td><td>gauge</td><td>{@code queueLength()}</td></tr>
 * <tr><td>{@code sema.acquire}</td><td>timer</td><td>the wait of every ended acquire request, tagged
 *     {@code outcome} = {@code granted}, {@code unavailable}, {@code timeout}, {@code cancelled},
 *     {@code interrupted} or {@code closed} (all six registered at once, so they show as 0)</td></tr>
 * <tr><td>{@code sema.permit.hold}</td><td>timer</td><td>time from grant to release, one sample per
 *     give-back</td></tr>
 * <tr><td>{@code sema.acquire.percentile}, {@code sema.permit.hold.percentile}</td><td>gauge</td><td>the
 *     median and 99th percentile of the last two minutes or so, tagged {@code phi} = {@code 0.5} or
 *     {@code 0.99} (default mode only)</td></tr>
 * <tr><td>{@code sema.leaks}</td><td>counter</td><td>permits returned by leak detection</td></tr>
 * </tbody>
 * </table>
 *
 * <h2>Partitions</h2>
 * For a semaphore with partitions (API.md §11a), the meters fed by events ({@code sema.acquire},
 * {@code sema.permit.hold}, their {@code .percentile} gauges and {@code sema.leaks}) are registered once per
 * partition, tagged {@code partition} = the partition's name, and once more with {@code partition} = {@code ""}
 * for the parent's own requests; the gauges above stay the semaphore's totals. Three gauges per partition,
 * tagged {@code partition}, show how the limit is shared:
 * <table class="striped">
 * <caption>Partition meters</caption>
 * <thead><tr><th>meter</th><th>type</th><th>value</th></tr></thead>
 * <tbody>
 * <tr><td>{@code sema.partition.used}</td><td>gauge</td><td>permits held by the partition's {@code Permit}s</td></tr>
 * <tr><td>{@code sema.partition.guarantee}</td><td>gauge</td><td>{@code floor(share × limit)} under the limit
 *     now</td></tr>
 * <tr><td>{@code sema.partition.waiters}</td><td>gauge</td><td>requests queued in the partition</td></tr>
 * </tbody>
 * </table>
 * Bind the parent: a partition's view takes no listeners, and {@code bindTo} on it throws
 * {@code UnsupportedOperationException}, leaving nothing registered. A semaphore without partitions has none of
 * these gauges, and its event meters are tagged {@code partition} = {@code ""} as a partitioned one's own
 * requests are: every semaphore's event meters have the same tag keys, which a Prometheus registry requires of
 * one meter name (Micrometer's {@code PrometheusMeterRegistry} drops a meter whose keys differ from those
 * registered first under its name), and in PromQL {@code partition=""} is the same as no such label.
 *
 * <h2>Keyed families</h2>
 * {@code new SemaphoreMetrics(KeyedSemaphore)} publishes a family (API.md §11b) as one semaphore: the meters fed
 * by events ({@code sema.acquire}, {@code sema.permit.hold}, their {@code .percentile} gauges and
 * {@code sema.leaks}) count every key's requests together, tagged {@code name} = the family's name and
 * {@code partition} = {@code ""}, never with the key: keys are unbounded (a tenant, a user), and a tag per key
 * would grow the registry by one series per key ever seen. Two gauges, tagged {@code name}, show the keys:
 * <table class="striped">
 * <caption>Family meters</caption>
 * <thead><tr><th>meter</th><th>type</th><th>value</th></tr></thead>
 * <tbody>
 * <tr><td>{@code sema.keys}</td><td>gauge</td><td>live keys: those holding permits or with requests in
 *     flight ({@code size()})</td></tr>
 * <tr><td>{@code sema.keys.max}</td><td>gauge</td><td>the most keys that may be live at once
 *     ({@code maxKeys()}); near it, new keys are refused with {@code TooManyKeysException}, counted as
 *     {@code sema.acquire{outcome="unavailable"}}</td></tr>
 * </tbody>
 * </table>
 * A family has none of the {@code sema.permits.*} gauges nor {@code sema.queue.waiters}: each key has a limit of
 * its own (possibly a different one per key) and an idle key does not exist, so a family-wide limit, ceiling or
 * count available would mean nothing, and summing what is held or queued would walk every live key at each
 * scrape. A family with a parent semaphore is bounded by it: bind the parent for the permits held by all keys
 * together.
 *
 * <h2>Two ways to time</h2>
 * By default the two timers are kept by Sema's own histograms (exact counts and totals; percentiles
 * within about 6%, over a window of 80 to 120 seconds) and published as Micrometer {@code FunctionTimer}s
 * with {@code .percentile} time gauges in the registry's time unit (named as Micrometer names a timer's
 * percentiles in registries without summaries; Prometheus shows a per-sample timer's percentiles as
 * {@code quantile} series of the timer instead). A sample is one or two atomic increments, so binding
 * costs little more than the clock reads that timing needs; the first sample of each timer allocates its
 * buckets (8 KB per stripe: 1, 2 or 4 stripes by the processors there are). In a Prometheus scrape: {@code sema_acquire_seconds_count},
 * {@code sema_acquire_seconds_sum}, {@code sema_acquire_percentile_seconds{phi="0.99"}}, and the same for
 * {@code sema_permit_hold}.
 *
 * <p>{@link Builder#perSampleTimers(boolean) perSampleTimers(true)} makes them Micrometer {@link Timer}s
 * instead, fed one sample at a time: they follow the registry's distribution settings (percentile
 * histograms with their {@code _bucket} series, which aggregate across instances; SLO boundaries) and keep
 * a maximum, for about 100 ns more per acquire + release.
 *
 * <h2>Times that are not known</h2>
 * A request that queued before the binding (or permits granted before it) has no measured time (the
 * semaphore reads no clock while nobody listens): its request still counts in {@code sema.acquire}, with
 * a wait of 0, and its give-back is not sampled in {@code sema.permit.hold}.
 *
 * <h2>Threading and cost</h2>
 * Thread-safe. The timers and the counter are updated by a {@link SemaphoreListener} on the thread where
 * each event happens: one update per event, with no allocation of its own (the meters of each outcome are
 * looked up once, at binding; for a partitioned semaphore an event first finds its partition's meters by
 * comparing the view it carries with each partition's, an unpartitioned one does not). Binding makes the
 * semaphore read {@code nanoTime()} once per grant, per queued request and per give-back. The gauges are read
 * on the scraping thread: for a local semaphore each gauge reads one field, and each partition gauge reads
 * every partition's counts under the semaphore's lock; for a {@code RedisSemaphore} (whose counts
 * live in Redis) all five gauges share one reading of the counts, made with one round trip and reused
 * for {@link #REMOTE_REFRESH} (so one scrape costs at most one round trip per semaphore), and the partition
 * gauges likewise share one reading of every partition's counts (at most one more). A reading that
 * fails (Redis unreachable) makes the gauges report {@code NaN} until the next one succeeds; it never
 * throws into the registry. In the default mode a scrape also reads each histogram that has samples (a few
 * thousand counters, under the histogram's own lock, which recording threads take only for a timer's first
 * sample).
 */
public final class SemaphoreMetrics implements MeterBinder, AutoCloseable {

    /** How long the counts of a remote semaphore, read once for all its gauges, are reused: 1 second. */
    public static final Duration REMOTE_REFRESH = Duration.ofSeconds(1);

    private static final System.Logger LOG = System.getLogger(SemaphoreMetrics.class.getName());
    private static final String[] OUTCOMES = outcomes();
    private static final String ACQUIRE = "How long acquire requests waited, by outcome";
    private static final String HOLD = "How long permits were held";
    private static final double[] PERCENTILES = {0.5, 0.99};
    /** The partition tag of the requests of no partition: every semaphore's event meters have the same tag keys. */
    private static final Tags NO_PARTITION = Tags.of("partition", "");

    /** The semaphore observed, or null when it is a family. */
    private final Semaphore semaphore;
    /** The family observed, or null when it is a semaphore. */
    private final KeyedSemaphore<?> family;
    private final Tags tags;
    private final boolean perSampleTimers;
    /** The partitions' names in priority order, empty when it has none: fixed when the semaphore is built. */
    private final List<String> partitions;
    /** Their views, in the same order: what a partition's events carry as their semaphore. */
    private final Semaphore[] views;
    private final List<Binding> bindings = new CopyOnWriteArrayList<>();
    private final Shared<State> states = new Shared<>();
    private final Shared<List<PartitionState>> partitionStates = new Shared<>();

    /**
     * Meters for {@code semaphore}, tagged with its name only.
     *
     * @param semaphore the semaphore to observe
     */
    public SemaphoreMetrics(Semaphore semaphore) {
        this(semaphore, Tags.empty());
    }

    /**
     * Meters for {@code semaphore}, tagged with its name and {@code tags}.
     *
     * @param semaphore the semaphore to observe
     * @param tags more tags for every meter
     */
    public SemaphoreMetrics(Semaphore semaphore, Iterable<Tag> tags) {
        this(Objects.requireNonNull(semaphore, "semaphore"), null, tags, false);
    }

    /**
     * Meters for a keyed family, tagged with its name only (see <i>Keyed families</i> in the class description).
     *
     * @param family the family to observe
     */
    public SemaphoreMetrics(KeyedSemaphore<?> family) {
        this(family, Tags.empty());
    }

    /**
     * Meters for a keyed family, tagged with its name and {@code tags}, never with a key.
     *
     * @param family the family to observe
     * @param tags more tags for every meter
     */
    public SemaphoreMetrics(KeyedSemaphore<?> family, Iterable<Tag> tags) {
        this(null, Objects.requireNonNull(family, "family"), tags, false);
    }

    private SemaphoreMetrics(Semaphore semaphore, KeyedSemaphore<?> family, Iterable<Tag> tags,
            boolean perSampleTimers) {
        this.semaphore = semaphore;
        this.family = family;
        this.tags = Tags.of(Objects.requireNonNull(tags, "tags"))
                .and("name", semaphore != null ? semaphore.name() : family.name());
        this.perSampleTimers = perSampleTimers;
        this.partitions = semaphore != null ? List.copyOf(semaphore.partitionNames()) : List.of();
        this.views = new Semaphore[partitions.size()];
        for (int i = 0; i < views.length; i++) {
            views[i] = semaphore.partition(partitions.get(i));
        }
    }

    /**
     * A builder of the meters of {@code semaphore}: for per-sample Micrometer timers, or tags given one by one.
     *
     * @param semaphore the semaphore to observe
     * @return a builder with no more tags, in the default mode
     */
    public static Builder builder(Semaphore semaphore) {
        return new Builder(Objects.requireNonNull(semaphore, "semaphore"), null);
    }

    /**
     * A builder of the meters of a keyed family: for per-sample Micrometer timers, or tags given one by one.
     *
     * @param family the family to observe
     * @return a builder with no more tags, in the default mode
     */
    public static Builder builder(KeyedSemaphore<?> family) {
        return new Builder(null, Objects.requireNonNull(family, "family"));
    }

    /** Builds a {@link SemaphoreMetrics}. Not thread-safe; each {@link #build()} makes a new one. */
    public static final class Builder {
        private final Semaphore semaphore;
        private final KeyedSemaphore<?> family;
        private Tags tags = Tags.empty();
        private boolean perSampleTimers;

        private Builder(Semaphore semaphore, KeyedSemaphore<?> family) {
            this.semaphore = semaphore;
            this.family = family;
        }

        /**
         * Adds tags to every meter (besides {@code name}).
         *
         * @param tags more tags
         * @return this builder
         */
        public Builder tags(Iterable<Tag> tags) {
            this.tags = this.tags.and(Objects.requireNonNull(tags, "tags"));
            return this;
        }

        /**
         * Whether {@code sema.acquire} and {@code sema.permit.hold} are Micrometer {@link Timer}s fed one sample
         * at a time (default false). They honour the registry's distribution settings (percentile histograms
         * with their {@code _bucket} series, SLO boundaries, expiry) and keep a maximum, at about 100 ns more
         * per acquire + release than the default mode (docs/BENCHMARKS.md, section 9).
         *
         * @param perSampleTimers true for per-sample timers
         * @return this builder
         */
        public Builder perSampleTimers(boolean perSampleTimers) {
            this.perSampleTimers = perSampleTimers;
            return this;
        }

        /**
         * The meters, not bound yet.
         *
         * @return a new {@code SemaphoreMetrics}
         */
        public SemaphoreMetrics build() {
            return new SemaphoreMetrics(semaphore, family, tags, perSampleTimers);
        }
    }

    /**
     * Registers the meters in {@code registry} and starts listening to the semaphore (or family). Binding to several
     * registries keeps each up to date; binding again to a registry it is bound to does nothing.
     *
     * @param registry the registry
     */
    @Override
    public synchronized void bindTo(MeterRegistry registry) { // rare, and never blocks: one binding per registry
        Objects.requireNonNull(registry, "registry");
        for (Binding b : bindings) {
            if (b.registry() == registry) {
                return; // bound already: a second listener would count every event twice
            }
        }
        List<Meter> meters = new ArrayList<>();
        if (family != null) {
            meters.add(Gauge.builder("sema.keys", family, KeyedSemaphore::size)
                    .description("Live keys: holding permits or with requests in flight").tags(tags)
                    .strongReference(true).register(registry));
            meters.add(Gauge.builder("sema.keys.max", family, KeyedSemaphore::maxKeys)
                    .description("The most keys that may be live at once").tags(tags).strongReference(true)
                    .register(registry));
            SemaphoreListener recorder = recorder(registry, meters, NO_PARTITION);
            family.addListener(recorder);
            bindings.add(new Binding(registry, meters, recorder));
            return;
        }
        meters.add(gauge(registry, "sema.permits.limit", "The limit: how many permits may be held at once",
                s -> s.limit()));
        meters.add(gauge(registry, "sema.permits.max", "The ceiling the limit may be raised to", s -> s.max()));
        meters.add(gauge(registry, "sema.permits.available", "Permits free now (negative below what is held)",
                s -> s.available()));
        meters.add(gauge(registry, "sema.permits.used", "Permits held by open Permits", s -> s.used()));
        meters.add(gauge(registry, "sema.queue.waiters", "Requests queued now", s -> s.queued()));
        SemaphoreListener recorder;
        if (views.length == 0) {
            recorder = recorder(registry, meters, NO_PARTITION);
        } else {
            partitionGauges(registry, meters);
            Recorder[] slots = new Recorder[views.length + 1];
            for (int i = 0; i < views.length; i++) {
                slots[i] = recorder(registry, meters, Tags.of("partition", partitions.get(i)));
            }
            slots[views.length] = recorder(registry, meters, NO_PARTITION);
            recorder = new PartitionRecorder(semaphore, views, slots);
        }
        try {
            semaphore.addListener(recorder);
        } catch (RuntimeException e) { // a partition's view takes no listeners: leave nothing registered
            for (Meter m : meters) {
                registry.remove(m);
            }
            throw e;
        }
        bindings.add(new Binding(registry, meters, recorder));
    }

    /** The timers and leak counter of one partition's events (of all events, unpartitioned), tagged {@code more}. */
    private Recorder recorder(MeterRegistry registry, List<Meter> meters, Tags more) {
        Counter leaks = Counter.builder("sema.leaks").description("Permits returned by leak detection")
                .tags(tags).tags(more).register(registry);
        meters.add(leaks);
        return perSampleTimers ? timers(registry, meters, more, leaks) : histograms(registry, meters, more, leaks);
    }

    private void partitionGauges(MeterRegistry registry, List<Meter> meters) {
        for (int i = 0; i < views.length; i++) {
            String partition = partitions.get(i);
            int slot = i;
            meters.add(partitionGauge(registry, "sema.partition.used", "Permits held by the partition's Permits",
                    partition, slot, PartitionState::used));
            meters.add(partitionGauge(registry, "sema.partition.guarantee",
                    "Permits guaranteed to the partition: its share of the limit, rounded down", partition, slot,
                    PartitionState::guarantee));
            meters.add(partitionGauge(registry, "sema.partition.waiters", "Requests queued in the partition now",
                    partition, slot, PartitionState::queued));
        }
    }

    /** Stops listening and removes the meters from every registry this was bound to. Idempotent. */
    @Override
    public void close() {
        for (Binding b : bindings) {
            if (bindings.remove(b)) {
                if (family != null) {
                    family.removeListener(b.recorder());
                } else {
                    semaphore.removeListener(b.recorder());
                }
                for (Meter m : b.meters()) {
                    b.registry().remove(m);
                }
            }
        }
    }

    private Recorder timers(MeterRegistry registry, List<Meter> meters, Tags more, Counter leaks) {
        LongConsumer[] acquire = new LongConsumer[OUTCOMES.length];
        for (int i = 0; i < OUTCOMES.length; i++) {
            Timer t = Timer.builder("sema.acquire").description(ACQUIRE).tags(tags).tags(more)
                    .tag("outcome", OUTCOMES[i]).register(registry);
            meters.add(t);
            acquire[i] = sample(t);
        }
        Timer hold = Timer.builder("sema.permit.hold").description(HOLD).tags(tags).tags(more).register(registry);
        meters.add(hold);
        return new Recorder(acquire, sample(hold), leaks);
    }

    private Recorder histograms(MeterRegistry registry, List<Meter> meters, Tags more, Counter leaks) {
        LongConsumer[] acquire = new LongConsumer[OUTCOMES.length];
        for (int i = 0; i < OUTCOMES.length; i++) {
            TimeHistogram h = new TimeHistogram();
            publish(registry, meters, "sema.acquire", ACQUIRE, more.and("outcome", OUTCOMES[i]), h);
            acquire[i] = h;
        }
        TimeHistogram hold = new TimeHistogram();
        publish(registry, meters, "sema.permit.hold", HOLD, more, hold);
        return new Recorder(acquire, hold, leaks);
    }

    /**
     * A histogram as a FunctionTimer (count, total) and its percentile gauges, in the registry's time unit, named as
     * Micrometer names a timer's percentile gauges where the registry has no summaries of its own.
     */
    private void publish(MeterRegistry registry, List<Meter> meters, String name, String description, Tags more,
            TimeHistogram histogram) {
        meters.add(FunctionTimer.builder(name, histogram, TimeHistogram::count, TimeHistogram::totalNanos,
                TimeUnit.NANOSECONDS).description(description).tags(tags).tags(more).register(registry));
        for (double phi : PERCENTILES) {
            meters.add(TimeGauge.builder(name + ".percentile", histogram, TimeUnit.NANOSECONDS,
                    h -> h.percentileNanos(phi)).description(description + ": percentiles of the last two minutes or so")
                    .tags(tags).tags(more).tag("phi", Double.toString(phi)).strongReference(true).register(registry));
        }
    }

    private Gauge gauge(MeterRegistry registry, String name, String description, ToDoubleFunction<State> value) {
        return Gauge.builder(name, this, m -> m.read(value)).description(description).tags(tags)
                .strongReference(true).register(registry);
    }

    private double read(ToDoubleFunction<State> value) {
        try {
            State s = state();
            return s == null ? Double.NaN : value.applyAsDouble(s);
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "cannot read the counts of " + semaphore, e);
            return Double.NaN;
        }
    }

    /** The counts: read directly for a local semaphore; for a remote one, once per REMOTE_REFRESH. */
    private State state() {
        if (!(semaphore instanceof StateSource source)) {
            long limit = semaphore.permits();
            return new State(limit, semaphore.maxPermits(), semaphore.availablePermits(), semaphore.queueLength(),
                    semaphore.isClosed(), false);
        }
        return states.get(source::state, State::remote);
    }

    private Gauge partitionGauge(MeterRegistry registry, String name, String description, String partition, int slot,
            ToDoubleFunction<PartitionState> value) {
        return Gauge.builder(name, this, m -> m.readPartition(partition, slot, value)).description(description)
                .tags(tags).tag("partition", partition).strongReference(true).register(registry);
    }

    private double readPartition(String partition, int slot, ToDoubleFunction<PartitionState> value) {
        try {
            List<PartitionState> all = partitionStates();
            if (all == null) {
                return Double.NaN;
            }
            if (slot < all.size() && all.get(slot).name().equals(partition)) {
                return value.applyAsDouble(all.get(slot));
            }
            for (PartitionState p : all) { // in priority order, as partitionNames(): found above unless it changed
                if (p.name().equals(partition)) {
                    return value.applyAsDouble(p);
                }
            }
            return Double.NaN;
        } catch (RuntimeException e) {
            LOG.log(System.Logger.Level.DEBUG, () -> "cannot read the partitions of " + semaphore, e);
            return Double.NaN;
        }
    }

    /** Every partition's counts at once: shared like the counts, by all the partition gauges of a scrape. */
    private List<PartitionState> partitionStates() {
        if (!(semaphore instanceof Partitioned source)) {
            return null;
        }
        return partitionStates.get(source::partitionStates, s -> remote());
    }

    /** Whether reading the counts costs a round trip, as the counts' own reading says (made now if none was). */
    private boolean remote() {
        if (!(semaphore instanceof StateSource)) {
            return false;
        }
        if (states.last == null) {
            try {
                state();
            } catch (RuntimeException e) {
                // a failed reading is taken for a remote one, and shows in the counts' gauges
            }
        }
        Reading<State> r = states.last;
        return r == null || r.remote();
    }

    /**
     * One reading of counts that every gauge of a scrape shares. For a remote semaphore (a round trip each) it is
     * reused for REMOTE_REFRESH and made by one scrape at a time; for a local one each gauge reads afresh.
     */
    private static final class Shared<T> {
        private final AtomicBoolean refreshing = new AtomicBoolean();
        private volatile Reading<T> last;

        /** The counts; null while a failed remote reading is fresh (it threw when made). */
        T get(Supplier<T> read, Predicate<T> remote) {
            Reading<T> r = last;
            if (r != null && !r.remote()) {
                return read.get();
            }
            long now = System.nanoTime();
            if (r != null && now - r.at() < REMOTE_REFRESH.toNanos()) {
                return r.value();
            }
            boolean mine = refreshing.compareAndSet(false, true);
            if (r != null && !mine) {
                return r.value(); // another scrape is reading it now
            }
            try {
                T value;
                try {
                    value = read.get();
                } catch (RuntimeException e) {
                    last = new Reading<>(null, now, true);
                    throw e;
                }
                last = new Reading<>(value, now, remote.test(value));
                return value;
            } finally {
                if (mine) {
                    refreshing.set(false);
                }
            }
        }
    }

    private record Reading<T>(T value, long at, boolean remote) {
    }

    private record Binding(MeterRegistry registry, List<Meter> meters, SemaphoreListener recorder) {
    }

    private static String[] outcomes() {
        Rejection[] why = Rejection.values();
        String[] names = new String[why.length + 1];
        names[0] = "granted";
        for (Rejection r : why) {
            names[r.ordinal() + 1] = r.name().toLowerCase(Locale.ROOT);
        }
        return names;
    }

    /**
     * The listener of one binding: one sample per event, no allocation. Its samples go to Sema's histograms or to
     * per-sample Micrometer timers; a call site sees at most those two classes, which the JIT still inlines.
     */
    private static final class Recorder implements SemaphoreListener {
        private final LongConsumer[] acquire;
        private final LongConsumer hold;
        private final Counter leaks;

        Recorder(LongConsumer[] acquire, LongConsumer hold, Counter leaks) {
            this.acquire = acquire;
            this.hold = hold;
            this.leaks = leaks;
        }

        @Override
        public void acquired(Semaphore semaphore, long permits, long waitNanos) {
            acquire[0].accept(waitNanos);
        }

        @Override
        public void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
            acquire[why.ordinal() + 1].accept(waitNanos);
        }

        @Override
        public void released(Semaphore semaphore, long permits, long heldNanos) {
            if (heldNanos >= 0) {
                hold.accept(heldNanos);
            }
        }

        @Override
        public void leaked(Semaphore semaphore, long permits) {
            leaks.increment(permits);
        }
    }

    /**
     * The listener of one binding of a partitioned semaphore: the recorder of the slot whose request the event is
     * of, found by the identity of the view the event carries (compared by name only for a semaphore that hands
     * its listeners other objects), then one sample as in {@link Recorder}. An unpartitioned semaphore's binding
     * is a plain {@code Recorder}, so this lookup costs it nothing.
     */
    private static final class PartitionRecorder implements SemaphoreListener {
        private final Semaphore parent;
        private final Semaphore[] views;
        /** The views' recorders in priority order, then the parent's own requests'. */
        private final Recorder[] slots;

        PartitionRecorder(Semaphore parent, Semaphore[] views, Recorder[] slots) {
            this.parent = parent;
            this.views = views;
            this.slots = slots;
        }

        private Recorder slot(Semaphore s) {
            if (s == parent) {
                return slots[views.length];
            }
            for (int i = 0; i < views.length; i++) {
                if (s == views[i]) {
                    return slots[i];
                }
            }
            return byName(s);
        }

        private Recorder byName(Semaphore s) {
            String name = s.name();
            for (int i = 0; i < views.length; i++) {
                if (views[i].name().equals(name)) {
                    return slots[i];
                }
            }
            return slots[views.length];
        }

        @Override
        public void acquired(Semaphore semaphore, long permits, long waitNanos) {
            slot(semaphore).acquired(semaphore, permits, waitNanos);
        }

        @Override
        public void rejected(Semaphore semaphore, long permits, Rejection why, long waitNanos) {
            slot(semaphore).rejected(semaphore, permits, why, waitNanos);
        }

        @Override
        public void released(Semaphore semaphore, long permits, long heldNanos) {
            slot(semaphore).released(semaphore, permits, heldNanos);
        }

        @Override
        public void leaked(Semaphore semaphore, long permits) {
            slot(semaphore).leaked(semaphore, permits);
        }
    }

    /** A timer's sample: a wait or hold time, negative counted as 0. */
    private static LongConsumer sample(Timer timer) {
        return nanos -> timer.record(Math.max(0, nanos), TimeUnit.NANOSECONDS);
    }
}
