// Apache Kafka's Java producer writing transactions for the interop test
// (tests/tests/broker_txn_java.rs): for each "commit:N" or "abort:N" argument, one
// transaction of N records "<tag>-<i>" (tag = the argument's index), committed or
// aborted. Prints "done" when all ended.
//
// Usage: java -cp <kafka libs>:<dir> TxnProducer BOOTSTRAP TOPIC TXN_ID commit:N abort:N ...

import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnProducer {
    public static void main(String[] args) {
        Properties props = new Properties();
        props.put("bootstrap.servers", args[0]);
        props.put("transactional.id", args[2]);
        props.put("key.serializer", StringSerializer.class.getName());
        props.put("value.serializer", StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(props)) {
            p.initTransactions();
            for (int t = 3; t < args.length; t++) {
                String[] step = args[t].split(":");
                int n = Integer.parseInt(step[1]);
                p.beginTransaction();
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(args[1], null, "t" + (t - 3) + "-" + i));
                }
                if (step[0].equals("commit")) {
                    p.commitTransaction();
                } else {
                    p.flush();
                    p.abortTransaction();
                }
            }
        }
        System.out.println("done");
    }
}
