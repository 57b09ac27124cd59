package dev.sema;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

/**
 * Shows that the model test can fail: a deliberately broken copy of the engine, which lends the permits owed
 * to a waiting partition to whoever asks ({@link Partitions#lendOwedForTests}), is caught by
 * {@link PartitionsModelTest}'s comparison, and by PartitionsTest's scenario for that rule.
 */
@Isolated
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BrokenPartitionsTest {

    @AfterEach
    void repair() {
        Partitions.lendOwedForTests = false;
    }

    @Test
    void theModelTestCatchesOwedPermitsLentToAnotherPartition() {
        Partitions.lendOwedForTests = true;
        SplittableRandom random = new SplittableRandom(42);
        assertThatThrownBy(() -> {
            for (int run = 0; run < 300; run++) {
                PartitionsModelTest.runOnce(random.split(), 200);
            }
        }).isInstanceOf(AssertionError.class);
    }

    @Test
    void theScenarioForTheRuleCatchesItToo() {
        Partitions.lendOwedForTests = true;
        assertThatThrownBy(() -> new PartitionsTest().permitsOwedToAWaitingPartitionGoToItAndAreNeverLent())
                .isInstanceOf(AssertionError.class).hasMessageContaining("may not take permits owed to checkout");
    }

    @Test
    void repairedTheSameSequencesPass() {
        assertThat(Partitions.lendOwedForTests).isFalse();
        SplittableRandom random = new SplittableRandom(42);
        for (int run = 0; run < 300; run++) {
            PartitionsModelTest.runOnce(random.split(), 200);
        }
    }
}
