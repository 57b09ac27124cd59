package dev.sema.testing.history;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongFunction;
import java.util.function.LongSupplier;

/**
 * Writes a history, one {@link HistoryFormat} line per event, to a file or to memory. Thread-safe.
 *
 * <h2>Time and order</h2>
 * {@link #write(LongFunction)} reads the clock ({@code System.nanoTime()} unless given another) while it
 * holds the writer's lock and writes the line before releasing it, so the lines of one writer are in time
 * order, and an event's time is taken after the caller decided to record it and before the call returns:
 * record {@code ok} after the acquire returned and {@code release} before {@code close()}, and the belief
 * the history shows lies within the time the permits were really held.
 *
 * <h2>Crashes</h2>
 * A file writer appends each line with one unbuffered {@code write(2)} of the whole line (the file is
 * opened with {@code O_APPEND}), so a process killed by SIGKILL loses nothing it recorded before, and
 * leaves at most its last line torn. Opening a file that ends in a torn line cuts that line off, so a
 * process started again may append to the file of its previous run. Lines are not forced to disk: a
 * killed process's writes are in the kernel already; only a crash of the host would lose them. One file
 * has one writer at a time.
 */
public final class HistoryWriter implements AutoCloseable {

    private final LongSupplier clock;
    /** Guards everything below: one line at a time, stamped and written in the same section. */
    private final ReentrantLock lock = new ReentrantLock();
    /*
     * A FileOutputStream, not a FileChannel: a channel closes itself when a thread writing to it is
     * interrupted, and recorders write from interrupted threads (a request that failed with
     * "interrupted", a task cancelled while it held a permit). FileOutputStream.write(byte[]) is one
     * write(2) of the whole array on a regular file, retried only for the rest of a short write.
     */
    private final FileOutputStream file;
    private final List<String> memory;
    private boolean closed;

    private HistoryWriter(LongSupplier clock, FileOutputStream file, List<String> memory) {
        this.clock = clock;
        this.file = file;
        this.memory = memory;
    }

    /**
     * Opens a file to append to, creating it if needed; a torn last line it ends with is cut off.
     *
     * @param path the file
     * @return a writer that stamps events with {@code System.nanoTime()}
     * @throws IOException if the file cannot be opened
     */
    public static HistoryWriter toFile(Path path) throws IOException {
        dropTornLine(path);
        return new HistoryWriter(System::nanoTime, new FileOutputStream(path.toFile(), true), null);
    }

    /**
     * Returns a writer that keeps its lines in memory, for tests that run in one JVM.
     *
     * @return a writer that stamps events with {@code System.nanoTime()}
     */
    public static HistoryWriter inMemory() {
        return inMemory(System::nanoTime);
    }

    /**
     * Returns a writer that keeps its lines in memory and stamps events with the given clock.
     *
     * @param clock returns the current time in nanoseconds, never going back
     * @return the writer
     */
    public static HistoryWriter inMemory(LongSupplier clock) {
        return new HistoryWriter(Objects.requireNonNull(clock, "clock"), null, new ArrayList<>());
    }

    /**
     * Writes the event made for the current time. The event is made and written under the writer's lock.
     *
     * @param at makes the event, given the current time in nanoseconds
     * @param <E> the type of event
     * @return the event written
     * @throws IllegalStateException if the writer is closed
     * @throws UncheckedIOException  if the line could not be written
     * @throws IllegalArgumentException if {@code at} makes an invalid event
     */
    public <E extends Event> E write(LongFunction<E> at) {
        lock.lock();
        try {
            E event = at.apply(clock.getAsLong());
            append(event);
            return event;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Writes an event with the time it carries. A history is sorted when it is read, so the time may be
     * earlier than that of lines written before.
     *
     * @param event the event
     * @throws IllegalStateException if the writer is closed
     * @throws UncheckedIOException  if the line could not be written
     */
    public void write(Event event) {
        Objects.requireNonNull(event, "event");
        lock.lock();
        try {
            append(event);
        } finally {
            lock.unlock();
        }
    }

    private void append(Event event) {
        if (closed) {
            throw new IllegalStateException("history writer closed, not written: " + HistoryFormat.format(event));
        }
        String line = HistoryFormat.format(event);
        if (memory != null) {
            memory.add(line);
            return;
        }
        try {
            file.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new UncheckedIOException("could not write history line: " + line, e);
        }
    }

    /**
     * Returns the lines written so far, without their {@code \n}, for a writer in memory.
     *
     * @return the lines in the order written
     * @throws IllegalStateException for a file writer (read the file with {@link HistoryReader})
     */
    public List<String> lines() {
        lock.lock();
        try {
            if (memory == null) {
                throw new IllegalStateException("a file writer keeps no lines: read its file");
            }
            return List.copyOf(memory);
        } finally {
            lock.unlock();
        }
    }

    /**
     * Returns the events written so far, read back from their lines, for a writer in memory.
     *
     * @return the events in the order written
     * @throws IllegalStateException for a file writer (read the file with {@link HistoryReader})
     */
    public List<Event> events() {
        return lines().stream().map(HistoryFormat::parse).toList();
    }

    /**
     * Returns the history of the events written so far, for a writer in memory.
     *
     * @return the history, in time order
     * @throws IllegalStateException for a file writer (read the file with {@link HistoryReader})
     */
    public History history() {
        return History.of(events());
    }

    /**
     * Closes the file; later writes fail. Idempotent; a writer in memory keeps its lines.
     *
     * @throws UncheckedIOException if the file could not be closed
     */
    @Override
    public void close() {
        lock.lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
            if (file != null) {
                file.close();
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } finally {
            lock.unlock();
        }
    }

    /** Cuts off the last line of the file if it does not end in '\n' (a writer killed in the middle of it). */
    private static void dropTornLine(Path path) throws IOException {
        if (!path.toFile().isFile()) {
            return;
        }
        try (RandomAccessFile f = new RandomAccessFile(path.toFile(), "rw")) {
            long end = f.length();
            byte[] chunk = new byte[4096];
            long keep = end;
            while (keep > 0) {
                int n = (int) Math.min(chunk.length, keep);
                f.seek(keep - n);
                f.readFully(chunk, 0, n);
                int i = n - 1;
                while (i >= 0 && chunk[i] != '\n') {
                    i--;
                }
                if (i >= 0) {
                    keep = keep - n + i + 1;
                    break;
                }
                keep -= n;
            }
            if (keep < end) {
                f.setLength(keep);
            }
        }
    }
}
