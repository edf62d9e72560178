// Apache Kafka's own Java client (kafka-clients 4.4) as one more client of a broker under test
// (test/kafka/java-client.test.ts compiles and runs it). One JSON object per line on stdout.
//
//   java -cp <kafka jars>:<classes> JavaClient roundtrip <bootstrap> <topic> <count>
//     Admin creates the topic (3 partitions); an idempotent producer (acks=all) sends <count> records
//     (key k<i>, value value-<i>, header n=<i>); a group consumer reads them all and commits; a second
//     member of the group then finds nothing left; the consumer checks keys, values, headers and the
//     per-partition order itself.
//   java -cp … JavaClient consume <bootstrap> <topic> <count>
//     a group consumer reads <count> records of a topic another client wrote and prints key=value lines.
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

public class JavaClient {
  static void out(String json) {
    System.out.println(json);
    System.out.flush();
  }

  static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
    Properties c = new Properties();
    c.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    c.put(ConsumerConfig.GROUP_ID_CONFIG, group);
    c.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
    c.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
    c.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    c.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
    return new KafkaConsumer<>(c);
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    String bootstrap = args[1];
    String topic = args[2];
    int count = Integer.parseInt(args[3]);
    if (mode.equals("consume")) {
      consumeOther(bootstrap, topic, count);
      return;
    }

    Properties a = new Properties();
    a.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    try (Admin admin = Admin.create(a)) {
      String clusterId = admin.describeCluster().clusterId().get();
      int nodes = admin.describeCluster().nodes().get().size();
      try {
        admin.createTopics(List.of(new NewTopic(topic, Optional.of(3), Optional.empty()))).all().get();
      } catch (ExecutionException e) {
        if (!(e.getCause() instanceof TopicExistsException)) throw e;
      }
      int partitions = admin.describeTopics(Set.of(topic)).allTopicNames().get().get(topic).partitions().size();
      out("{\"admin\":{\"clusterId\":\"" + clusterId + "\",\"nodes\":" + nodes + ",\"partitions\":" + partitions + "}}");
    }

    Properties p = new Properties();
    p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
    p.put(ProducerConfig.ACKS_CONFIG, "all");
    p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
    p.put(ProducerConfig.LINGER_MS_CONFIG, "5");
    p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
    long lastOffset = -1;
    try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
      List<java.util.concurrent.Future<RecordMetadata>> acks = new ArrayList<>();
      for (int i = 0; i < count; i++) {
        ProducerRecord<String, String> r = new ProducerRecord<>(topic, "k" + i, "value-" + i);
        r.headers().add("n", Integer.toString(i).getBytes("UTF-8"));
        acks.add(producer.send(r));
      }
      producer.flush();
      for (var f : acks) lastOffset = Math.max(lastOffset, f.get().offset());
    }
    out("{\"produced\":" + count + "}");

    String group = "java-" + topic;
    Map<String, String> seen = new HashMap<>();
    Map<Integer, Integer> lastByPartition = new HashMap<>();
    Map<Integer, Long> lastOffsetByPartition = new HashMap<>();
    int bad = 0;
    long deadline = System.currentTimeMillis() + 60_000;
    try (KafkaConsumer<String, String> consumer = consumer(bootstrap, group)) {
      consumer.subscribe(List.of(topic));
      while (seen.size() < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
          int i = Integer.parseInt(r.key().substring(1));
          Header h = r.headers().lastHeader("n");
          String n = h == null ? null : new String(h.value(), "UTF-8");
          if (!r.value().equals("value-" + i) || !Integer.toString(i).equals(n)) bad++;
          // the producer sent in key order: within a partition, keys and offsets only go up
          Integer prev = lastByPartition.put(r.partition(), i);
          if (prev != null && prev >= i) bad++;
          Long prevOffset = lastOffsetByPartition.put(r.partition(), r.offset());
          if (prevOffset != null && prevOffset + 1 != r.offset()) bad++;
          seen.put(r.key(), r.value());
        }
      }
      consumer.commitSync();
    }
    out("{\"consumed\":" + seen.size() + ",\"bad\":" + bad + ",\"partitions\":" + lastByPartition.size() + "}");

    // a later member of the group resumes at the committed offsets: nothing left
    int resumed = 0;
    try (KafkaConsumer<String, String> consumer = consumer(bootstrap, group)) {
      consumer.subscribe(List.of(topic));
      long until = System.currentTimeMillis() + 3_000;
      while (System.currentTimeMillis() < until) resumed += consumer.poll(Duration.ofMillis(300)).count();
    }
    out("{\"resumed\":" + resumed + "}");
  }

  static void consumeOther(String bootstrap, String topic, int count) throws Exception {
    int n = 0;
    long deadline = System.currentTimeMillis() + 60_000;
    try (KafkaConsumer<String, String> consumer = consumer(bootstrap, "java-reader-" + topic)) {
      consumer.subscribe(List.of(topic));
      while (n < count && System.currentTimeMillis() < deadline) {
        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(500))) {
          Header h = r.headers().lastHeader("h");
          String hv = h == null ? "" : new String(h.value(), "UTF-8");
          out("{\"key\":\"" + r.key() + "\",\"value\":\"" + r.value() + "\",\"h\":\"" + hv + "\"}");
          n++;
        }
      }
      consumer.commitSync();
    }
  }
}
