package dev.sema.chaos;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.sema.testing.RedisServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A short chaos run end to end, as {@code bin/chaos} runs it: three worker JVMs, half a minute of faults, the
 * checker's verdict. It keeps the harness itself working in every build; the long runs are {@code bin/chaos}
 * and {@code bin/chaos full}.
 */
@Tag("redis")
class ChaosRunTest {

    @Test
    @Timeout(240)
    void aShortChaosRunEndsWithEveryHistoryCheckedAndNoViolation(@TempDir Path dir) throws Exception {
        assumeTrue(RedisServer.Source.INSTALLED_OR_BUNDLED.find().isPresent(),
                RedisServer.Source.INSTALLED_OR_BUNDLED.missing());
        String report = runWithoutViolation(dir, "processes=3", "minutes=0.5", "threads=4");
        assertThat(Files.readString(dir.resolve("report.txt"))).contains("PASSED");
        try (var files = Files.list(dir)) {
            assertThat(files.filter(p -> p.toString().endsWith(".hist")).count()).isGreaterThanOrEqualTo(4);
        }
        // The partitioned semaphore was asked through each partition and through the parent, its grants all
        // checked against its one limit.
        String histories;
        try (var files = Files.list(dir)) {
            histories = files.filter(p -> p.getFileName().toString().startsWith("w"))
                    .filter(p -> p.toString().endsWith(".hist")).map(ChaosRunTest::read)
                    .collect(Collectors.joining());
        }
        assertThat(histories).containsPattern("sem=chaos-p8 permits=\\d+ kind=\\w+@gold")
                .containsPattern("sem=chaos-p8 permits=\\d+ kind=\\w+@silver")
                .containsPattern("sem=chaos-p8 permits=\\d+ kind=\\w+\\n");
        // The keyed family's requests went to its keys, each recorded as a request of the key's own semaphore
        // (so the checker held each key to its limit alone); and keys idle for their expiry were seen gone from
        // Redis and stored again, re-created while the run went on.
        Set<String> keys = KEY_REQUEST.matcher(histories).results().map(m -> m.group(1)).collect(Collectors.toSet());
        assertThat(keys).as("keys of chaos-k asked").hasSizeGreaterThanOrEqualTo(4);
        assertThat(report).containsPattern("gone from Redis and back [^:]*: \\d+ times \\(.*chaos-k:key\\d+ \\d+");
    }

    private static final Pattern KEY_REQUEST = Pattern.compile("invoke req=\\d+ sem=chaos-k:(key\\d+) permits=");

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * A keyed family is declared once and recorded as one semaphore per key, under the name sema-redis gives the
     * key's semaphore, each with the family's limit; a family has keys and no partitions.
     */
    @Test
    void aKeyedFamilyIsOneSemaphorePerKeyInTheHistory() {
        ChaosWorker.Sem family = ChaosWorker.parse("chaos-2:2,fam[3]:2").get(1);
        assertThat(family.name()).isEqualTo("fam");
        assertThat(family.limit()).isEqualTo(2);
        assertThat(family.semaphores()).containsExactly("fam:key0", "fam:key1", "fam:key2");
        assertThat(ChaosWorker.parse("chaos-2:2").getFirst().semaphores()).containsExactly("chaos-2");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosWorker.parse("fam[0]:2"))
                .hasMessageContaining("fam[0]:2");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosWorker.parse("fam[3]:2:a=0.5"))
                .hasMessageContaining("partitions");
    }

    /**
     * Keys are picked unevenly, each half as often as the one before (the last two alike), so that a run has
     * both keys held at their limit and keys idle long enough to expire; every key is asked.
     */
    @Test
    void keysArePickedEachHalfAsOftenAsTheOneBefore() {
        java.util.Random random = new java.util.Random(42);
        int[] picked = new int[6];
        for (int i = 0; i < 64_000; i++) {
            picked[ChaosWorker.key(random, 6)]++;
        }
        // expected 32,000, 16,000, 8,000, 4,000, 2,000, 2,000: within 10 % of each
        int[] expected = {32_000, 16_000, 8_000, 4_000, 2_000, 2_000};
        for (int k = 0; k < 6; k++) {
            assertThat(picked[k]).as("key%d", k).isBetween(expected[k] * 9 / 10, expected[k] * 11 / 10);
        }
        assertThat(ChaosWorker.key(random, 1)).isZero();
    }

    @Test
    void badArgumentsAreRefusedNamingTheArgument() {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("procs=3"))
                .hasMessageContaining("procs");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("processes=1"))
                .hasMessageContaining("processes=1");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("minutes=0"))
                .hasMessageContaining("minutes=0");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("fast"))
                .hasMessageContaining("'fast'");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("topology=mesh"))
                .hasMessageContaining("topology=mesh");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("replicas=1"))
                .hasMessageContaining("the single topology has no replica");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("topology=sentinel",
                "replicas=3")).hasMessageContaining("replicas=3");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("topology=cluster",
                "replicas=2")).hasMessageContaining("replicas=2: 0 or 1");
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> ChaosRun.Options.parse("splitbrain"))
                .hasMessageContaining("topology=cluster");
        assertThat(ChaosRun.Options.parse("topology=cluster", "splitbrain").splitBrain()).isTrue();
        assertThat(ChaosRun.Options.parse("topology=sentinel").replicas()).as("the default there: all").isEqualTo(2);
        assertThat(ChaosRun.Options.parse("topology=sentinel", "replicas=0").replicas()).isZero();
        assertThat(ChaosRun.Options.parse("topology=cluster").replicas()).as("the default there: all").isEqualTo(1);
        assertThat(ChaosRun.Options.parse().replicas()).as("single has none").isZero();
    }

    /**
     * A short run on Sentinel, as {@code bin/chaos topology=sentinel} runs it: each of the topology's faults
     * once at least (the primary killed, cut off from its Sentinels, from its replicas, from some workers, and
     * a forced failover), with every grant and renewal waiting for both replicas; no violation, and the
     * Sentinels promoted a replica when the primary was killed (a quorum of them agreed it was down) and when a failover was forced,
     * the sampler following them to the new primary.
     */
    @Test
    @Timeout(300)
    void aShortRunOnSentinelFailsOverAndEndsWithNoViolation(@TempDir Path dir) throws Exception {
        String report = shortRunWithoutViolation("sentinel", dir);
        assertThat(Files.readString(dir.resolve("w1.log"))).as("the worker's own account")
                .contains("grants wait for 2 replica(s)");
        assertThat(report).containsPattern("kill-primary=\\d+").containsPattern("partition-primary-sentinels=\\d+")
                .containsPattern("partition-primary-replicas=\\d+").containsPattern("partition-primary-workers=\\d+")
                .containsPattern("failover=\\d+")
                .containsPattern("kill-primary n0: replaced by n[12]").containsPattern("n\\d promoted");
    }

    /**
     * A short run on Redis Cluster, as {@code bin/chaos topology=cluster} runs it: each of the topology's faults
     * once at least (a primary killed, a semaphore's slot moved while it is used, one node cut off), with every
     * grant and renewal waiting for its primary's replica; no violation, a replica took over, and the moved
     * slot's keys went with it.
     */
    @Test
    @Timeout(300)
    void aShortRunOnClusterFailsOverMovesSlotsAndEndsWithNoViolation(@TempDir Path dir) throws Exception {
        String report = shortRunWithoutViolation("cluster", dir);
        assertThat(report).containsPattern("kill-primary=\\d+").containsPattern("migrate-slot=\\d+")
                .containsPattern("partition-node=\\d+").doesNotContain("partition-primary-cluster")
                .containsPattern("kill-primary n\\d: its replica took over")
                .containsPattern("migrate-slot \\S+ slot \\d+ n\\d>n\\d: [1-9]\\d* keys");
        assertThat(Files.readString(dir.resolve("w1.log"))).as("the worker's own account")
                .contains("grants wait for 1 replica(s)");
    }

    /**
     * A one-minute run of three workers on {@code topology} (which needs an installed Redis 7): its output, once
     * it ended with no violation.
     */
    private static String shortRunWithoutViolation(String topology, Path dir) throws Exception {
        java.util.Optional<RedisServer.Binary> binary = RedisServer.Source.INSTALLED.find();
        assumeTrue(binary.isPresent() && !binary.get().version().startsWith("6."),
                "the " + topology + " topology needs an installed Redis 7");
        return runWithoutViolation(dir, "topology=" + topology, "processes=3", "minutes=1", "threads=4");
    }

    /** A run with {@code args} into {@code dir}: its output, once it ended with no violation. */
    private static String runWithoutViolation(Path dir, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of(args));
        all.add("out=" + dir);
        ChaosRun.Options o = ChaosRun.Options.parse(all.toArray(String[]::new));
        ByteArrayOutputStream said = new ByteArrayOutputStream();
        int code = ChaosRun.run(o, new PrintStream(said, true, StandardCharsets.UTF_8));
        String report = said.toString(StandardCharsets.UTF_8);
        System.out.println(report);
        assertThat(code).as(report).isZero();
        assertThat(report).contains("violations: 0", "PASSED");
        return report;
    }

    /** The slot of a semaphore is that of its hash tag, {@code {name}}, as Redis Cluster computes it. */
    @Test
    void aSemaphoresSlotIsItsNamesCrc16() {
        assertThat(ClusterRedis.slot("123456789")).isEqualTo(0x31C3 % ClusterRedis.SLOTS); // CRC16/XMODEM check
        assertThat(ClusterRedis.slot("chaos-2")).isEqualTo(8320); // CLUSTER KEYSLOT sem:{chaos-2}:meta
        assertThat(ClusterRedis.slot("chaos-k:key1")).isEqualTo(14311);
        String line = "e7d1 127.0.0.1:30004@40004 myself,master - 0 0 7 connected 0-5460 8320 [93->-292f]";
        assertThat(ClusterRedis.owns(line, 0)).isTrue();
        assertThat(ClusterRedis.owns(line, 5460)).isTrue();
        assertThat(ClusterRedis.owns(line, 8320)).isTrue();
        assertThat(ClusterRedis.owns(line, 5461)).isFalse();
        assertThat(ClusterRedis.owns(line, 93)).isTrue(); // in 0-5460; the bracket only says it is migrating
        assertThat(ClusterRedis.owns("e7d1 127.0.0.1:1@2 myself,slave 9a 0 0 7 connected", 0)).isFalse();
    }
}
