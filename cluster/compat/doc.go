// Package compat is the client compatibility suite (issue 19): real Kafka
// clients other than franz-go — kcat (librdkafka), python3-confluent-kafka,
// python3-kafka (kafka-python) and IBM/sarama — drive a three-broker
// embedded cluster exactly as a user would, and every step is checked
// against what Apache Kafka answers, refusals included. The Debian packages
// are installed by .ci/run; a missing one fails the suite with the command
// that installs it.
package compat
