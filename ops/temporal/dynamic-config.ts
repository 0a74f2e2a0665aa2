/**
 * Dynamic config every Temporal server airlock starts gets (the CLI's dev
 * server and the topology's server), and what a user's own server needs
 * for the same latency (docs/operations.md, Latency). Measured with
 * `npm run bench -- --only floor`: a no-op activity ~100 ms without, ~13 ms with.
 *
 * `history.transferProcessorMaxPollRPS` (server default 20) caps how often
 * a history shard reads its transfer queue, the queue that hands every new
 * activity task and workflow task to matching. A job's tasks all live on
 * one shard, and each activity costs two such hand-offs (the activity task,
 * then the workflow task its result wakes), so after a short burst a job
 * waits ~45 ms at each. At 1000 the wait is ~1 ms. Under load a read takes
 * up to `history.transferTaskBatchSize` tasks, so a higher rate means more,
 * smaller reads of the server's database, never more tasks.
 *
 * `matching.numTaskqueueWritePartitions` (server default 4): with several
 * partitions a task can land on a partition where no poll waits and sit
 * there ~2 s (1 activity in ~80 here) until it is forwarded. With one, every
 * task goes to the root partition, where polls of the other partitions are
 * forwarded. The read partitions stay at the default, so tasks an earlier
 * run left in the other partitions' backlogs are still read (lowering them
 * too would strand those).
 */
export const TEMPORAL_DYNAMIC_CONFIG: Readonly<Record<string, number>> = {
  'history.transferProcessorMaxPollRPS': 1000,
  'matching.numTaskqueueWritePartitions': 1,
};
