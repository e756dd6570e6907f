package stream

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/segmentio/kafka-go"
)

// The Java client's murmur2 of known keys (values from Kafka's
// UtilsTest.testMurmur2: "21"→-973932308, "foobar"→-790332482, ...).
func TestMurmur2Java(t *testing.T) {
	for _, c := range []struct {
		key  string
		want int32
	}{
		{"21", -973932308},
		{"foobar", -790332482},
		{"a-little-bit-long-string", -985981536},
		{"a-little-bit-longer-string", -1486304829},
		{"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971},
		{"abc", 479470107},
	} {
		if got := int32(murmur2([]byte(c.key))); got != c.want {
			t.Errorf("murmur2(%q) = %d, Java's %d", c.key, got, c.want)
		}
	}
}

// PartitionOf agrees with kafka-go's Murmur2Balancer (which the kafka.Writer
// used before) on random keys of every length class and partition lists.
func TestPartitionOfMatchesMurmur2Balancer(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for _, n := range []int{1, 2, 3, 12, 64} {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		for i := 0; i < 2000; i++ {
			key := make([]byte, rng.Intn(40))
			rng.Read(key)
			want := kafka.Murmur2Balancer{}.Balance(kafka.Message{Key: key}, ids...)
			if got := PartitionOf(key, ids); got != want {
				t.Fatalf("n=%d key %x: PartitionOf %d, Murmur2Balancer %d", n, key, got, want)
			}
		}
	}
}

func ExamplePartitionOf() {
	fmt.Println(PartitionOf([]byte("http://news.example.org/"), []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}))
	// Output: 4
}
