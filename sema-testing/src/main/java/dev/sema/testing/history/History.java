package dev.sema.testing.history;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * A history: the events of every process of a run, merged in time order, with what reading them noticed.
 *
 * @param events the events, ordered by {@link Event#nanos()}; events at the same instant keep the order
 *               they were given in (file by file, line by line)
 * @param notes  remarks about the input that are not violations, e.g. a torn last line that was skipped
 */
public record History(List<Event> events, List<String> notes) {

    /** Sorts the events by time, stably: the one place that orders a history. */
    public History {
        List<Event> sorted = new ArrayList<>(events);
        sorted.sort(Comparator.comparingLong(Event::nanos));
        events = List.copyOf(sorted);
        notes = List.copyOf(notes);
    }

    /**
     * Returns the history of the given events.
     *
     * @param events events in any order
     * @return the history, in time order
     */
    public static History of(Collection<? extends Event> events) {
        return new History(List.copyOf(events), List.of());
    }
}
