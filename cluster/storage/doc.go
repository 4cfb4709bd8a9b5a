// Package storage is the broker's per-partition durable log: Kafka record batches (magic v2)
// stored exactly as they travel on the wire, in segment files, with a sparse offset index, a
// leader-epoch cache, a high-watermark checkpoint, CRC-checked crash recovery, a configurable
// fsync policy, and a "LazyFS" mode that models the page cache for the power-loss nemesis.
//
// # On-disk layout
//
// One directory per partition holds:
//
//	00000000000000000000.log    segment: whole batches back to back, named by base offset (%020d)
//	00000000000000000000.index  sparse offset index: 8-byte entries (relative offset uint32,
//	                            file position uint32, big-endian), one every IndexIntervalBytes
//	leader-epoch-checkpoint     "0\n<n>\n" then n lines "<epoch> <startOffset>"
//	high-watermark-checkpoint   "0\n1\n<hw>\n"
//	recovery-point-offset-checkpoint
//	                            "0\n1\n<offset>\n": everything below is known durable
//	.clean-shutdown             present only between Close and the next Open
//
// Checkpoints are replaced atomically (write a .tmp, fsync, rename, fsync the directory).
// Segments are contiguous: each starts at the offset where the previous one ends. The last
// segment is the active one; a new one is rolled when an Append would take it past
// SegmentBytes, and the old one is fsynced (data and index) before the new one is created, after
// which the new base is written as the recovery point. Reads seek with the index, then walk
// batch headers from the indexed position; neither Append nor Read depends on the log's size.
//
// # Recovery
//
// Open removes the clean-shutdown marker first (so a crash from then on is seen as unclean). With
// the marker, segments are trusted: each index is checked cheaply (ordering, bounds, its last
// entry against the batch it names) and rebuilt from the log if it is missing, short or
// inconsistent, and the batches after the last index entry are walked to find the end. Without
// the marker, every segment from the one holding the recovery point onwards (all of them when
// there is no recovery point) is scanned batch by batch: framing (a sane Length within the file),
// magic 2, CRC-32C, and offset continuity. At the first bad or torn batch the file is truncated
// there, later segments are deleted, and what was cut and why is logged (slog, Warn). Everything
// before the bad batch is kept. Leader-epoch entries starting at or past the recovered log end
// are dropped, and the recovered high watermark is clamped into [StartOffset, LEO].
//
// # LazyFS
//
// Without LazyFS, Append writes to the file at once: a killed process keeps its data, because the
// kernel's page cache survives a process crash. With LazyFS the package plays the page cache
// itself: appended bytes wait in memory (the active segment's pending tail), reads see them, and
// they reach the file — which models the disk — only on fsync (by policy, Sync, a roll or Close),
// once older than WritebackDelay (a background goroutine, like the kernel's dirty_expire), or
// when more than LazyMaxPendingBytes wait. A SIGKILL of the process, or Crash(), loses what is
// pending, exactly like a power cut; on reopen the log ends at the last durable byte (and a batch
// torn by a write-back cut short is removed by recovery).
//
// # Concurrency
//
// A Log serializes writers (Append, truncation, retention, Sync) with its own RWMutex and lets
// any number of readers (Read, ScanBatches, LEO...) run concurrently with each other. Readers use
// ReadAt and copy LazyFS bytes under the shared lock, so they never see a half-written batch.
package storage
