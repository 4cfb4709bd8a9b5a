package history

// The disk-fault and clock-skew nemeses (issue 29; DESIGN.md section 3):
// faults of a node's own storage and clock, made inside gregor's broker
// (cluster/nodefault), which a process signal cannot make.
const (
	// NemesisDiskFault arms one disk fault drawn from the seed on the
	// target for the hold: EIO on the next write, fsync or read of its
	// partition logs, a full disk (ENOSPC on every write), or a bit flipped
	// in a stored batch. The broker takes its log directory offline and
	// halts (Kafka's LogDirFailureChannel with no log dir left); the
	// harness restarts it at the end (disk-fault-restart). Ends with
	// end-disk-fault.
	NemesisDiskFault = "disk-fault"
	// NemesisClockSkew skews the target's wall clock by a drawn D for the
	// hold, then sets it back. Ends with end-clock-skew.
	NemesisClockSkew = "clock-skew"
	// VerbDiskBitFlipped is the bit flip as the broker made it: the node,
	// the topic partition (key) and the base offset of the batch hit.
	VerbDiskBitFlipped = "disk-bit-flipped"
	// VerbLogDirFailed is a node's log directory going offline (its
	// broker halts), with the error that took it.
	VerbLogDirFailed = "log-dir-failed"
	// VerbDiskFaultRestart is the harness starting a node its log-dir
	// failure halted, once the fault is disarmed.
	VerbDiskFaultRestart = "disk-fault-restart"
)

// Disk faults a disk-fault step draws (NodeFaultValue.DiskFault).
const (
	DiskEIOWrite = "eio-write" // the next write of a segment returns EIO
	DiskEIOFsync = "eio-fsync" // the next fsync of a segment returns EIO
	DiskEIORead  = "eio-read"  // the next read of a segment returns EIO
	DiskFull     = "enospc"    // every write returns ENOSPC until disarmed
	DiskBitFlip  = "bit-flip"  // one bit flipped at rest in a stored batch
)

// DiskFaults lists them, in the order a step draws from.
var DiskFaults = []string{DiskEIOWrite, DiskEIOFsync, DiskEIORead, DiskFull, DiskBitFlip}

// NodeFaultValue are the fields of a disk-fault or clock-skew step's
// operations (in NemesisValue): the disk fault drawn, the skew (a Go
// duration), the base offset of the batch a flip hit (with the partition in
// Key), and at a step's end how many node events it saw. A history
// written before these nemeses decodes with them zero.
type NodeFaultValue struct {
	DiskFault     string `json:"disk_fault,omitempty"`
	Skew          string `json:"skew,omitempty"`
	FlippedOffset *int64 `json:"flipped_offset,omitempty"`
}
