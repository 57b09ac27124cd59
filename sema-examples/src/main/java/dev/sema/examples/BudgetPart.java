package dev.sema.examples;

import static dev.sema.examples.Text.format;
import static dev.sema.examples.Text.millisSince;

import dev.sema.Parallel;
import dev.sema.Semaphore;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.IntStream;
import java.util.zip.CRC32;

/**
 * {@code Parallel.mapWeighted} at work: files of very different sizes are read into memory and
 * checksummed, each call holding its file's size in bytes from a memory budget, so the bytes in memory
 * never exceed the budget however the sizes mix. Then a file larger than the whole budget is refused
 * without being read.
 */
final class BudgetPart implements Part {

    /**
     * The knobs of a run.
     *
     * @param files how many files
     * @param minBytes the smallest file
     * @param maxBytes the largest file, at most the budget
     * @param budgetBytes the memory budget, in bytes
     * @param seed makes the sizes repeatable
     */
    record Settings(int files, int minBytes, int maxBytes, long budgetBytes, long seed) {
        static Settings standard() {
            return new Settings(120, 64 << 10, 4 << 20, 16L << 20, 3);
        }
    }

    /** A file to read: its position in the input and its size. */
    record File(int index, long bytes) {
    }

    /** A file's checksum. */
    record Checksum(int index, long crc) {
    }

    /** What a run measured. */
    record Measured(long budget, int files, List<Checksum> results, long peakBytes, long available, int queued,
            Throwable tooLarge, long tooLargeCalls) {
        List<Check> checks() {
            return List.of(
                    new Check("bytes in memory never exceeded the budget",
                            peakBytes <= budget, format("peak %s of %s", mib(peakBytes), mib(budget))),
                    new Check("mapWeighted returned every checksum in input order",
                            results.size() == files
                                    && IntStream.range(0, files).allMatch(i -> results.get(i).index() == i),
                            format("%d checksums for %d files", results.size(), files)),
                    new Check("every byte of the budget came back",
                            available == budget && queued == 0,
                            format("availablePermits() %,d of %,d, queueLength() %d", available, budget, queued)),
                    new Check("a file larger than the budget failed the run without being read",
                            tooLarge instanceof IllegalArgumentException && tooLargeCalls == 0,
                            format("%s; fn called %d times", tooLarge, tooLargeCalls)));
        }
    }

    private final Settings settings;
    private final Terminal terminal;

    BudgetPart(Settings settings, Terminal terminal) {
        this.settings = settings;
        this.terminal = terminal;
    }

    @Override
    public String name() {
        return "budget";
    }

    @Override
    public String title() {
        return "Parallel.mapWeighted: reading files under a memory budget counted in bytes";
    }

    @Override
    public List<Check> run() throws InterruptedException {
        return measure().checks();
    }

    Measured measure() throws InterruptedException {
        Random random = new Random(settings.seed());
        List<File> files = new ArrayList<>();
        long total = 0;
        for (int i = 0; i < settings.files(); i++) {
            long bytes = settings.minBytes() + random.nextInt(settings.maxBytes() - settings.minBytes() + 1);
            files.add(new File(i, bytes));
            total += bytes;
        }
        Semaphore memory = Semaphore.builder().name("memory").permits(settings.budgetBytes()).build();
        terminal.println(format("Parallel.mapWeighted(files, memory, File::bytes, file -> checksum(file)): %d files"
                + " of %s to %s,", settings.files(), mib(settings.minBytes()), mib(settings.maxBytes())));
        terminal.println(format("%s in all, each read whole into memory, under a budget of %s",
                mib(total), mib(settings.budgetBytes())));
        Gauge inMemory = new Gauge();
        Gauge calls = new Gauge();
        long start = System.nanoTime();
        List<Checksum> results = Parallel.mapWeighted(files, memory, File::bytes, file -> {
            inMemory.add(file.bytes()); // after its permits were granted...
            calls.add(1);
            try {
                return checksum(file);
            } finally {
                calls.subtract(1);
                inMemory.subtract(file.bytes()); // ...and before they go back
            }
        });
        terminal.println(format("  %d checksums in %d ms; at most %s in memory at once, by up to %d calls",
                results.size(), millisSince(start), mib(inMemory.peak()), calls.peak()));

        File huge = new File(0, settings.budgetBytes() * 3 / 2);
        LongAdder hugeCalls = new LongAdder();
        Throwable tooLarge = null;
        try {
            Parallel.mapWeighted(List.of(huge), memory, File::bytes, file -> {
                hugeCalls.increment();
                return checksum(file);
            });
        } catch (IllegalArgumentException e) {
            tooLarge = e;
        }
        terminal.println(format("  a file of %s (more than the whole budget) is refused: %s", mib(huge.bytes()),
                tooLarge == null ? "not refused" : tooLarge.getMessage()));
        return new Measured(settings.budgetBytes(), settings.files(), results, inMemory.peak(),
                memory.availablePermits(), memory.queueLength(), tooLarge, hugeCalls.sum());
    }

    /** Real work: "reads" the file into a buffer of its size, checksums it, and pauses as if writing it out. */
    private static Checksum checksum(File file) throws InterruptedException {
        byte[] data = new byte[Math.toIntExact(file.bytes())];
        for (int i = 0; i < data.length; i += 64) {
            data[i] = (byte) (i ^ file.index());
        }
        CRC32 crc = new CRC32();
        crc.update(data);
        Thread.sleep(5);
        return new Checksum(file.index(), crc.getValue());
    }

    static String mib(long bytes) {
        return bytes >= 1 << 20 ? format("%.1f MiB", bytes / 1048576.0) : format("%d KiB", bytes >> 10);
    }
}
