"""python3-kafka (kafka-python 2.0.2) against a gregor cluster, as a user
would drive it. argv: bootstrap topic group. Prints one JSON object with
what it saw; the Go test checks it. kafka-python 2.0.2 has no idempotent
producer (enable_idempotence came in 2.1): it produces with acks=all and
retries, the strongest it offers."""
import json
import sys
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import InvalidConfigurationError

bootstrap, topic, group = sys.argv[1:4]
out = {}

# Right after the cluster comes up: the admin client probes the node
# Metadata names as controller (IncompatibleBrokerVersion if that fails).
admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=3,
                              topic_configs={"min.insync.replicas": "2"})])
try:
    admin.create_topics([NewTopic(topic + "-bad", num_partitions=1, replication_factor=1,
                                  topic_configs={"no.such.config": "1"})])
    out["unknown_config"] = "accepted"
except InvalidConfigurationError as e:
    out["unknown_config"] = type(e).__name__
deadline = time.time() + 15
while True:
    res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])[0]
    r = res.resources[0]
    if r[0] == 0:
        break
    if time.time() > deadline:
        raise SystemExit("describe_configs: error %d" % r[0])
    time.sleep(0.1)
# resources: (error_code, error_message, resource_type, resource_name, config_entries)
out["configs"] = {e[0]: e[1] for e in r[4]}

p = KafkaProducer(bootstrap_servers=bootstrap, acks="all", retries=5)
n = 200
futures = [p.send(topic, value=("v%d" % i).encode()) for i in range(n)]
for f in futures:
    f.get(timeout=30)
p.flush()
out["produced"] = n

c = KafkaConsumer(topic, bootstrap_servers=bootstrap, group_id=group, auto_offset_reset="earliest",
                  enable_auto_commit=False, consumer_timeout_ms=10000)
seen = set()
deadline = time.time() + 60
while len(seen) < n and time.time() < deadline:
    batch = c.poll(timeout_ms=1000)
    for tp, msgs in batch.items():
        for m in msgs:
            seen.add(m.value.decode())
    if batch:
        c.commit()
out["consumed"] = len(seen)
parts = [TopicPartition(topic, i) for i in range(2)]
out["committed"] = {str(tp.partition): c.committed(tp) for tp in parts}
out["end"] = {str(tp.partition): off for tp, off in c.end_offsets(parts).items()}
c.close()
print(json.dumps(out))
