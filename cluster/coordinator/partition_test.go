package coordinator

import "testing"

func TestPartitionForMatchesJava(t *testing.T) {
	// Values of Java's String.hashCode.
	for s, want := range map[string]int32{"": 0, "a": 97, "hello": 99162322, "polygenelubricants": -1 << 31, "größe": 98762257, "😀x": 54959989} {
		if got := javaStringHash(s); got != want {
			t.Errorf("hash(%q) = %d, want %d", s, got, want)
		}
	}
	// abs(MinInt32) is 0 in Kafka's Utils.abs.
	if p := PartitionFor("polygenelubricants", 50); p != 0 {
		t.Errorf("PartitionFor(min hash) = %d, want 0", p)
	}
	if p := PartitionFor("hello", 50); p != 99162322%50 {
		t.Errorf("PartitionFor(hello) = %d", p)
	}
}
