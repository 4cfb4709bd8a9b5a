"""python3-confluent-kafka (librdkafka) against a gregor cluster, as a user
would drive it. argv: bootstrap topic group. Prints one JSON object with
what it saw; the Go test checks it. Exits non-zero on any client error."""
import json
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

bootstrap, topic, group = sys.argv[1:4]
out = {}

# Admin: create the topic with configs, then describe them.
admin = AdminClient({"bootstrap.servers": bootstrap})
fs = admin.create_topics([NewTopic(topic, num_partitions=3, replication_factor=3,
                                   config={"min.insync.replicas": "2", "max.message.bytes": "100000"})],
                         operation_timeout=10)
fs[topic].result(timeout=15)
# A topic config Kafka does not know is refused.
bad = admin.create_topics([NewTopic(topic + "-bad", num_partitions=1, replication_factor=1,
                                    config={"no.such.config": "1"})], operation_timeout=10)
try:
    bad[topic + "-bad"].result(timeout=15)
    out["unknown_config"] = "accepted"
except KafkaException as e:
    out["unknown_config"] = e.args[0].str()
deadline = time.time() + 15
while True:
    try:
        res = admin.describe_configs([ConfigResource(ConfigResource.Type.TOPIC, topic)])
        entries = list(res.values())[0].result(timeout=15)
        break
    except KafkaException:
        if time.time() > deadline:
            raise
        time.sleep(0.1)
out["configs"] = {k: {"value": v.value, "source": int(v.source)} for k, v in entries.items()}

# Idempotent produce, acks=all.
p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})
errors = []
def delivered(err, msg):
    if err is not None:
        errors.append(str(err))
n = 300
for i in range(n):
    p.produce(topic, value=("v%d" % i).encode(), key=("k%d" % i).encode(), on_delivery=delivered)
    p.poll(0)
left = p.flush(30)
if left or errors:
    raise SystemExit("produce: %d undelivered, errors %s" % (left, errors[:3]))
out["produced"] = n

# A record over max.message.bytes: MESSAGE_TOO_LARGE, as Kafka answers.
p2 = Producer({"bootstrap.servers": bootstrap, "message.max.bytes": 1000000, "compression.type": "none"})
big = []
p2.produce(topic, value=b"x" * 200000, on_delivery=lambda err, msg: big.append(str(err)))
p2.flush(30)
out["too_large"] = big[0] if big else "no report"

# Group consume with commits, to the end.
c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
              "enable.auto.commit": False, "enable.partition.eof": True})
c.subscribe([topic])
seen = set()
eof = set()
deadline = time.time() + 60
while len(seen) < n or len(eof) < 3:
    if time.time() > deadline:
        raise SystemExit("consumed %d of %d, eof on %s" % (len(seen), n, sorted(eof)))
    m = c.poll(1.0)
    if m is None:
        continue
    if m.error():
        if m.error().code() == -191:  # _PARTITION_EOF
            eof.add(m.partition())
            continue
        raise SystemExit("consume: %s" % m.error())
    eof.discard(m.partition())
    seen.add(m.value().decode())
    c.commit(message=m, asynchronous=False)
out["consumed"] = len(seen)

# Committed versus end offsets.
parts = [TopicPartition(topic, i) for i in range(3)]
committed = c.committed(parts, timeout=15)
out["committed"] = {str(tp.partition): tp.offset for tp in committed}
out["end"] = {str(i): c.get_watermark_offsets(TopicPartition(topic, i), timeout=15)[1] for i in range(3)}
c.close()
print(json.dumps(out))
