# confluent-kafka (librdkafka) over SASL_SSL with SCRAM-SHA-512: produce n
# records acks=all, consume them back in a group, and print a JSON report.
# argv: bootstrap topic group ca user password-file n
import json
import sys

from confluent_kafka import Consumer, Producer

bootstrap, topic, group, ca, user, pwfile, n = sys.argv[1:8]
n = int(n)
with open(pwfile) as f:
    password = f.readline().rstrip("\n")
sec = {
    "bootstrap.servers": bootstrap,
    "security.protocol": "SASL_SSL",
    "sasl.mechanisms": "SCRAM-SHA-512",
    "sasl.username": user,
    "sasl.password": password,
    "ssl.ca.location": ca,
}
errors = []
p = Producer(dict(sec, **{"acks": "all", "enable.idempotence": True}))
delivered = []
def done(err, msg):
    if err is not None:
        errors.append(str(err))
    else:
        delivered.append(msg.offset())
for i in range(n):
    p.produce(topic, key=b"k%d" % i, value=b"v%d" % i, on_delivery=done)
p.flush(60)
c = Consumer(dict(sec, **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False}))
c.subscribe([topic])
consumed = 0
for _ in range(600):
    m = c.poll(0.1)
    if m is None:
        if consumed >= n:
            break
        continue
    if m.error():
        errors.append(str(m.error()))
        continue
    consumed += 1
c.close()
print(json.dumps({"produced": len(delivered), "consumed": consumed, "errors": errors}))
