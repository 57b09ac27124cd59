package dev.sema.testing.history;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reads history files and merges them into one {@link History} in time order.
 *
 * <p>A file's last line that does not end in {@code \n} is torn (its writer was killed in the middle of
 * it) and is skipped with a note, even when it parses, since it may have lost digits at its end. Any
 * other line that is not a valid {@link HistoryFormat} line makes the input unreadable.
 */
public final class HistoryReader {

    private HistoryReader() {
    }

    /**
     * Reads and merges history files.
     *
     * @param files the files, in any order
     * @return their events in time order; at the same instant, in the order of the files, then of the lines
     * @throws IOException if a file cannot be read, or holds a line (other than a torn last one) that is
     *                     not valid, named by file and line number
     */
    public static History read(Path... files) throws IOException {
        return read(Arrays.asList(files));
    }

    /**
     * Reads and merges history files.
     *
     * @param files the files, in any order
     * @return their events in time order; at the same instant, in the order of the files, then of the lines
     * @throws IOException if a file cannot be read, or holds a line (other than a torn last one) that is
     *                     not valid, named by file and line number
     */
    public static History read(List<Path> files) throws IOException {
        List<Event> events = new ArrayList<>();
        List<String> notes = new ArrayList<>();
        for (Path file : files) {
            parse(file.toString(), Files.readAllBytes(file), events, notes);
        }
        return new History(events, notes);
    }

    /**
     * Parses the bytes of one history file, adding its events and notes.
     *
     * @throws IOException if a complete line is not valid
     */
    static void parse(String source, byte[] content, List<Event> events, List<String> notes) throws IOException {
        int lineStart = 0;
        int lineNumber = 0;
        for (int i = 0; i < content.length; i++) {
            if (content[i] != '\n') {
                continue;
            }
            lineNumber++;
            String line = new String(content, lineStart, i - lineStart, StandardCharsets.UTF_8);
            lineStart = i + 1;
            try {
                Event e = HistoryFormat.parse(line);
                if (e != null) {
                    events.add(e);
                }
            } catch (IllegalArgumentException e) {
                throw new IOException(source + ":" + lineNumber + ": " + e.getMessage() + ": '" + line + "'", e);
            }
        }
        if (lineStart < content.length) {
            String torn = new String(content, lineStart, content.length - lineStart, StandardCharsets.UTF_8);
            notes.add(source + ":" + (lineNumber + 1) + ": skipped a torn last line '" + torn + "'");
        }
    }
}
