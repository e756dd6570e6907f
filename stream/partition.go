package stream

import "github.com/segmentio/kafka-go"

// PartitionOf is the one partitioner of the project: the partition, among
// ids (a topic's partition ids, as its metadata lists them), that a key is
// written to. It is Kafka's default for keyed records (the Java client's
// murmur2 of the key, sign bit cleared, modulo the partition count), the
// same as kafka-go's Murmur2Balancer, so that the producers (KafkaSink),
// the query API locating an object's state (query.KafkaLocator) and the
// benchmarks placing records agree with any other Kafka client. It panics
// when ids is empty, as there is no partition to choose.
func PartitionOf(key []byte, ids []int) int { return ids[partitionIndex(key, len(ids))] }

// partitionIndex is the index in PartitionOf's ids of key's partition,
// of n.
func partitionIndex(key []byte, n int) int { return int((murmur2(key) & 0x7fffffff) % uint32(n)) }

// KeyBalancer is PartitionOf as a kafka.Balancer, for kafka.Writer.
type KeyBalancer struct{}

// Balance implements kafka.Balancer.
func (KeyBalancer) Balance(msg kafka.Message, ids ...int) int { return PartitionOf(msg.Key, ids) }

// murmur2 is the Java client's key hash (Utils.murmur2), seed 0x9747b28c.
func murmur2(data []byte) uint32 {
	const seed, m, r = uint32(0x9747b28c), uint32(0x5bd1e995), 24
	n := len(data)
	h := seed ^ uint32(n)
	for i := 0; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	tail := n &^ 3
	switch n % 4 {
	case 3:
		h ^= uint32(data[tail+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[tail+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[tail])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}
