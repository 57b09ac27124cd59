package dev.sema.examples;

import java.util.List;

/** One part of the demo: it shows one feature doing real work and returns the checks of its promises. */
interface Part {

    /** The part's name on the command line, e.g. {@code bin/demo gate}. */
    String name();

    /** A one-line heading. */
    String title();

    /**
     * Runs the part, printing as it goes, and returns its checks.
     *
     * @return the promises checked, kept or not
     * @throws Exception if the part could not run to the end; the demo counts that as a failed check
     */
    List<Check> run() throws Exception;
}
