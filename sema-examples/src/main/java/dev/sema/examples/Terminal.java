package dev.sema.examples;

import java.io.Console;
import java.io.PrintStream;
import java.lang.reflect.Method;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The demo's output: lines that stay, and one live status line. On a terminal the status line is
 * redrawn in place with {@code \r} and lines that stay are printed above it; otherwise (output piped to
 * a file or a CI log) every status update is a plain line of its own.
 */
final class Terminal {
    private final PrintStream out;
    private final boolean interactive;
    private final ReentrantLock lock = new ReentrantLock(); // not synchronized: callers may be virtual threads
    private String status = ""; // the status line now on screen (interactive only)

    Terminal(PrintStream out, boolean interactive) {
        this.out = out;
        this.interactive = interactive;
    }

    /** The standard output, redrawn in place only if it is a terminal. */
    static Terminal system() {
        return new Terminal(System.out, stdoutIsTerminal());
    }

    boolean isInteractive() {
        return interactive;
    }

    /**
     * Prints an event of a part's run, stamped with the seconds since {@code start} (nanoTime), wrapped at 96
     * characters with the continuation lines indented under it.
     */
    void event(long start, String what) {
        String stamp = Text.format("%6.1fs  ", (System.nanoTime() - start) / 1e9);
        for (String line : Text.wrap(what, 96)) {
            println(stamp + line);
            stamp = " ".repeat(stamp.length());
        }
    }

    /** Prints a line that stays; on a terminal the status line is redrawn below it. */
    void println(String line) {
        lock.lock();
        try {
            if (interactive && !status.isEmpty()) {
                out.print("\r" + padded(line, status.length()) + "\n" + status);
            } else {
                out.println(line);
            }
            out.flush();
        } finally {
            lock.unlock();
        }
    }

    /** Shows the live status line. */
    void status(String line) {
        lock.lock();
        try {
            if (interactive) {
                out.print("\r" + padded(line, status.length()));
                status = line;
            } else {
                out.println(line);
            }
            out.flush();
        } finally {
            lock.unlock();
        }
    }

    /** Leaves the last status line on screen; later lines go below it. */
    void endStatus() {
        lock.lock();
        try {
            if (interactive && !status.isEmpty()) {
                out.println();
                status = "";
            }
        } finally {
            lock.unlock();
        }
    }

    /** Pads with spaces to at least {@code width}, so a shorter line covers a longer one. */
    private static String padded(String line, int width) {
        return line.length() >= width ? line : line + " ".repeat(width - line.length());
    }

    /**
     * Tells whether standard output is a terminal. Up to JDK 21 {@code System.console()} is
     * {@code null} otherwise; JDK 22 to 24 may return a console anyway and answer through
     * {@code Console.isTerminal()}, which this code (compiled for Java 21) calls reflectively.
     */
    private static boolean stdoutIsTerminal() {
        Console console = System.console();
        if (console == null) {
            return false;
        }
        try {
            Method isTerminal = Console.class.getMethod("isTerminal");
            return (Boolean) isTerminal.invoke(console);
        } catch (ReflectiveOperationException notBeforeJdk22) {
            return true;
        }
    }
}
