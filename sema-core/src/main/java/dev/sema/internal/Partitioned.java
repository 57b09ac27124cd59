package dev.sema.internal;

import java.util.List;

/**
 * A semaphore whose partitions (API.md §11a) can be read, for observers (metrics, the actuator endpoint):
 * each partition's counts as they stand.
 */
public interface Partitioned {

    /**
     * The partitions' counts now, in priority order; empty when the semaphore has none or is a partition.
     *
     * @return the counts, one per partition
     */
    List<PartitionState> partitionStates();

    /**
     * One partition's counts at one moment.
     *
     * @param name the partition's name
     * @param share its share of the limit
     * @param used the permits its Permits hold
     * @param guarantee {@code floor(share × limit)} under the current limit
     * @param queued its queue's length
     */
    record PartitionState(String name, double share, long used, long guarantee, int queued) {
    }
}
