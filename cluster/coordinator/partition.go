package coordinator

import "unicode/utf16"

// javaStringHash is Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16
// code units, in int32 arithmetic. Kafka places coordinator keys with it,
// and so do we, so a key lands on the partition a Kafka cluster would use.
func javaStringHash(s string) int32 {
	var h int32
	for _, c := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(c)
	}
	return h
}

// PartitionFor is the internal-topic partition of a coordinator key (a
// group id, a transactional id): Kafka's Utils.abs(key.hashCode) %
// partitions, as GroupCoordinator.partitionFor and
// TransactionStateManager.partitionFor compute it (abs(MinInt32) is 0
// there). -1 while the topic has no partitions.
func PartitionFor(key string, partitions int32) int32 {
	if partitions <= 0 {
		return -1
	}
	h := javaStringHash(key)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % partitions
}
