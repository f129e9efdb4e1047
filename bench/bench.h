/* Benchmarks behind `pertload bench`; each returns an exit status. */
#ifndef PL_BENCH_H
#define PL_BENCH_H

/** `pertload bench masks DB [--samples N] [--peer-samples M]`: single-core
 *  samples/s of the masks engine beside the naive unions it replaces. */
int pl_bench_masks(int argc, char **argv);

/** `pertload bench collate DB [--batch-size B] [--samples N]`: one-core
 *  collation throughput, sparse and dense, beside the memset roofline. */
int pl_bench_collate(int argc, char **argv);

/** `pertload bench gpu DB [--batch-size B] [--batches N] [--threads T]`: the
 *  bytes a batch uploads and, with a CUDA device, the copy and expansion
 *  times; without one it says so and measures through the host backend. */
int pl_bench_gpu(int argc, char **argv);

/** `pertload bench payload DB [--batch-size B] [--threads T] [--shuffle]`:
 *  payload streaming beside the raw sequential read of the same file; with
 *  --epochs, the disk's sequential and random-row rates beside pertload's
 *  in-order, block and shuffled epochs (bench_payload_epochs.c). */
int pl_bench_payload(int argc, char **argv);

/** `pertload bench memory [--mib M] [--reps R]`: memset and memcpy bandwidth
 *  of one core, the roofline of dense outputs. */
int pl_bench_memory(int argc, char **argv);

/** `pertload bench memory --table DB [--ranks N]`: summed Pss of N serve
 *  ranks of one database once each has its sample table, with the shared
 *  table and with one per rank (bench_table.c). */
int pl_bench_memory_table(const char *db, int ranks, const char *json);

/** `pertload bench khop DB [--k K1,K2] [--types T1,T2] [--samples N]`: one-core
 *  samples/s of the k-hop neighbourhoods (masks/khop.h). */
int pl_bench_khop(int argc, char **argv);

#endif
