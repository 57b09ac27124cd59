package dev.sema.bench;

/**
 * The work a benchmark runs while it holds permits. Each benchmark passes one constant instance, so in a
 * forked JMH run (one benchmark and one implementation per JVM) the call is monomorphic and inlined.
 */
@FunctionalInterface
public interface Section {
    /** A section that does nothing: the pure acquire/release cost. */
    Section EMPTY = () -> { };

    /**
     * Runs the work.
     *
     * @throws InterruptedException if the work was interrupted
     */
    void run() throws InterruptedException;
}
