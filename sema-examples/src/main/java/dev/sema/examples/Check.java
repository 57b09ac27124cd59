package dev.sema.examples;

/**
 * One promise of the demo, whether it was kept, and the numbers that show it.
 *
 * @param promise what the demo promised, in words
 * @param passed whether the run kept it
 * @param evidence the numbers measured
 */
record Check(String promise, boolean passed, String evidence) {

    @Override
    public String toString() {
        return (passed ? "  [ok]     " : "  [FAILED] ") + promise + ": " + evidence;
    }
}
