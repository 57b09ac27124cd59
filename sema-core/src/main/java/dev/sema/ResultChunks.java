package dev.sema;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;

/**
 * The results of a parallel map in input order, stored in chunks that never move once handed out, so a
 * call writes its own slot with no lock while the run goes on. Chunks grow from 16 to 8192 slots: memory
 * follows the results produced, never the size of the input up front.
 *
 * <p>Only the one thread that starts calls reserves slots; a slot's write must happen-before
 * {@link #toList}, which the runs guarantee by reading their in-flight count last.
 */
final class ResultChunks {
    private static final int FIRST_CHUNK = 16;
    private static final int MAX_CHUNK = 8192;

    private final List<Object[]> chunks = new ArrayList<>();
    private Object[] chunk;
    private int slot;
    private long reserved;

    /** The chunk holding the next slot; {@link #reserve} then returns that slot's index in it. */
    Object[] nextChunk() {
        if (chunk == null || slot == chunk.length) {
            chunk = new Object[chunk == null ? FIRST_CHUNK : Math.min(chunk.length * 2, MAX_CHUNK)];
            chunks.add(chunk);
            slot = 0;
        }
        return chunk;
    }

    /** Takes the next slot of {@link #nextChunk()}'s chunk. */
    int reserve() {
        nextChunk();
        reserved++;
        return slot++;
    }

    /** Every reserved slot's value, in order, as an unmodifiable list. */
    <R> List<R> toList() {
        Object[] all = new Object[Math.toIntExact(reserved)];
        int copied = 0;
        for (Object[] c : chunks) {
            int n = Math.min(c.length, all.length - copied);
            System.arraycopy(c, 0, all, copied, n);
            copied += n;
        }
        @SuppressWarnings("unchecked")
        List<R> list = (List<R>) Arrays.asList(all);
        return Collections.unmodifiableList(list);
    }
}
