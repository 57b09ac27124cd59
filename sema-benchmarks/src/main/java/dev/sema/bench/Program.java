package dev.sema.bench;

/**
 * How a benchmark program that starts Redis clients ends: with the status its body returns, or 1 after
 * printing what it threw, through {@link System#exit}, since the clients' threads would keep the JVM alive.
 */
public final class Program {

    /** A program's body: returns its exit status. */
    @FunctionalInterface
    public interface Body {
        /**
         * Runs the program.
         *
         * @return the exit status
         * @throws Exception anything, reported as status 1
         */
        int run() throws Exception;
    }

    private Program() {
    }

    /**
     * Runs {@code body}, then {@code cleanup} (which must not throw), then exits with the body's status.
     *
     * @param body the program
     * @param cleanup what must go before the JVM does (child processes), run whatever the body did
     */
    public static void exit(Body body, Runnable cleanup) {
        int status;
        try {
            status = body.run();
        } catch (Throwable e) {
            e.printStackTrace();
            status = 1;
        }
        cleanup.run();
        System.exit(status);
    }
}
