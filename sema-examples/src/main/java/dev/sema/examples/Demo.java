package dev.sema.examples;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Sema at work, run by {@code bin/demo}: twelve parts, each doing real work with one feature and checking
 * what it promised. The exit status is 0 only if every check passed.
 *
 * <ol>
 *   <li>{@code service} ({@link ServicePart}): 10,000 virtual threads under a worker limit and a memory
 *       budget, with resizing, timeouts, cancellation, {@code close()} and {@code awaitIdle()}.
 *   <li>{@code parallel} ({@link ParallelPart}): {@code Parallel.map} over a lazy input, runs sharing one
 *       semaphore, and {@code Parallel.forEach} failing fast over an endless input.
 *   <li>{@code budget} ({@link BudgetPart}): {@code Parallel.mapWeighted} under a byte budget.
 *   <li>{@code gate} ({@link GatePart}): a {@code Gate} that drains in-flight work on shutdown.
 *   <li>{@code leak} ({@link LeakPart}): a leaked {@code Permit} found by leak detection.
 *   <li>{@code refill} ({@link RefillPart}): credit that accrues, spent with {@code acquire(k).forget()}.
 *   <li>{@code adaptive} ({@link AdaptivePart}): an {@code AdaptiveLimit} following a partner API's
 *       changing capacity.
 *   <li>{@code priorities} ({@link PrioritiesPart}): partitions of one limit: checkout keeps its share while
 *       batch floods in and is shed, and batch alone may use the whole limit.
 *   <li>{@code tenants} ({@link TenantsPart}): a {@code KeyedSemaphore}, a limit per tenant under a partition
 *       as its parent: a noisy tenant held to its limit, a flood of tenant ids refused beyond {@code maxKeys}.
 *   <li>{@code redis} ({@link FleetPart}): several JVMs sharing one {@code RedisSemaphore}.
 *   <li>{@code spring} ({@link SpringPart}): the Spring Boot example application (sema-spring-example, in a JVM
 *       of its own) under load: the {@code sema.web} filter with an adaptive limit, {@code @WithPermits}, a limit
 *       changed through {@code /actuator/semaphores}, the Prometheus meters.
 *   <li>{@code reactive} ({@link ReactivePart}): the reactive example application (sema-reactive-example, WebFlux and
 *       gRPC on Netty, in a JVM of its own with BlockHound installed) under load: {@code sema.web} as a
 *       {@code WebFilter}, {@code @WithPermits} on a {@code Mono} method, {@code SemaServerInterceptor}, and no
 *       event-loop thread blocked.
 * </ol>
 *
 * <p>Arguments name the parts to run, in the order given; none runs them all.
 */
public final class Demo {
    private final Terminal terminal;

    Demo(Terminal terminal) {
        this.terminal = terminal;
    }

    public static void main(String[] args) throws InterruptedException {
        Terminal terminal = Terminal.system();
        Map<String, Part> all = standardParts(terminal);
        List<Part> chosen = new ArrayList<>();
        for (String arg : args) {
            Part part = all.get(arg);
            if (part == null) {
                System.err.println("usage: bin/demo [PART...]   where PART is one of " + String.join(", ", all.keySet())
                        + " (default: all, in that order)");
                System.exit(2);
            }
            chosen.add(part);
        }
        boolean passed = new Demo(terminal).run(chosen.isEmpty() ? List.copyOf(all.values()) : chosen);
        System.exit(passed ? 0 : 1);
    }

    /** Every part with the settings {@code bin/demo} uses, by name, in the order they run. */
    static Map<String, Part> standardParts(Terminal terminal) {
        Map<String, Part> parts = new LinkedHashMap<>();
        for (Part part : List.of(
                new ServicePart(ServicePart.Settings.standard(), terminal),
                new ParallelPart(ParallelPart.Settings.standard(), terminal),
                new BudgetPart(BudgetPart.Settings.standard(), terminal),
                new GatePart(GatePart.Settings.standard(), terminal),
                new LeakPart(LeakPart.Settings.standard(), terminal),
                new RefillPart(RefillPart.Settings.standard(), terminal),
                new AdaptivePart(AdaptivePart.Settings.standard(), terminal),
                new PrioritiesPart(PrioritiesPart.Settings.standard(), terminal),
                new TenantsPart(TenantsPart.Settings.standard(), terminal),
                new FleetPart(FleetPart.Settings.standard(), terminal),
                new SpringPart(SpringPart.Settings.standard(), terminal),
                new ReactivePart(ReactivePart.Settings.standard(), terminal))) {
            parts.put(part.name(), part);
        }
        return parts;
    }

    /**
     * Runs the parts one after the other, prints each part's checks after it and a summary at the end.
     * A part that throws counts as a failed check; the next part still runs.
     *
     * @return whether every check of every part passed
     */
    boolean run(List<Part> parts) throws InterruptedException {
        long start = System.nanoTime();
        Map<Part, List<Check>> results = new LinkedHashMap<>();
        int index = 0;
        for (Part part : parts) {
            index++;
            terminal.println("");
            terminal.println(format("== %d/%d  %s ==", index, parts.size(), part.title()));
            terminal.println("");
            List<Check> checks = runOne(part);
            results.put(part, checks);
            terminal.println("");
            terminal.println("Checks");
            checks.forEach(check -> terminal.println(check.toString()));
        }
        return summarize(results, (System.nanoTime() - start) / 1e9);
    }

    private List<Check> runOne(Part part) throws InterruptedException {
        try {
            List<Check> checks = part.run();
            return checks.isEmpty()
                    ? List.of(new Check("the part checked something", false, "it returned no checks"))
                    : checks;
        } catch (InterruptedException e) {
            throw e;
        } catch (Exception | AssertionError e) {
            terminal.endStatus();
            StringWriter trace = new StringWriter();
            e.printStackTrace(new PrintWriter(trace));
            trace.toString().lines().forEach(line -> terminal.println("    " + line));
            return List.of(new Check("the part ran to the end", false, e.toString()));
        }
    }

    private boolean summarize(Map<Part, List<Check>> results, double seconds) {
        int total = 0;
        int passed = 0;
        terminal.println("");
        terminal.println(format("== Summary (%.1f s) ==", seconds));
        for (Map.Entry<Part, List<Check>> e : results.entrySet()) {
            List<Check> checks = e.getValue();
            long ok = checks.stream().filter(Check::passed).count();
            total += checks.size();
            passed += (int) ok;
            terminal.println(format("  %-9s %2d of %2d checks passed   %s", e.getKey().name(), ok, checks.size(),
                    e.getKey().title()));
        }
        List<Check> failed = results.values().stream().flatMap(List::stream).filter(c -> !c.passed()).toList();
        if (failed.isEmpty()) {
            terminal.println(format("All %d checks passed.", total));
            return true;
        }
        terminal.println(format("SOME CHECKS FAILED: %d of %d.", total - passed, total));
        failed.forEach(check -> terminal.println(check.toString()));
        return false;
    }

    private static String format(String format, Object... args) {
        return String.format(Locale.ROOT, format, args);
    }
}
