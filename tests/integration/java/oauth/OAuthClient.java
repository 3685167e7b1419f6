// Apache Kafka's Java client (kafka-clients in .cache/java/lib) over
// SASL_PLAINTEXT with OAUTHBEARER, every other setting at its default. Kafka's
// own unsecured login callback cannot sign RS256, so TokenHandler (the
// sasl.login.callback.handler.class) hands the client a JWT minted by the
// test, read from the file named by the system property oauth.token.file.
// Produces COUNT records to TOPIC and prints "OK n", or "AUTH <exception>:
// <message>" when authentication fails. Compiled and run by
// test_oauthbearer.py:
//   java -Doauth.token.file=F OAuthClient BOOTSTRAP TOPIC COUNT

import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Base64;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;
import org.apache.kafka.common.serialization.StringSerializer;

public class OAuthClient {
    public static class TokenHandler implements AuthenticateCallbackHandler {
        @Override
        public void configure(Map<String, ?> configs, String mechanism, List<AppConfigurationEntry> entries) {}

        @Override
        public void close() {}

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            for (Callback cb : callbacks) {
                if (!(cb instanceof OAuthBearerTokenCallback)) throw new UnsupportedCallbackException(cb);
                String jwt;
                try {
                    jwt = new String(Files.readAllBytes(Paths.get(System.getProperty("oauth.token.file")))).trim();
                } catch (java.io.IOException e) {
                    throw new IllegalStateException(e);
                }
                // the claims the client wants for its own bookkeeping
                String payload = new String(Base64.getUrlDecoder().decode(jwt.split("\\.")[1]));
                long exp = Long.parseLong(payload.replaceAll(".*\"exp\":\\s*(-?\\d+).*", "$1")) * 1000;
                String sub = payload.replaceAll(".*\"sub\":\\s*\"([^\"]*)\".*", "$1");
                ((OAuthBearerTokenCallback) cb).token(new OAuthBearerToken() {
                    public String value() { return jwt; }
                    public Set<String> scope() { return Collections.emptySet(); }
                    public long lifetimeMs() { return exp; }
                    public String principalName() { return sub; }
                    public Long startTimeMs() { return null; }
                });
            }
        }
    }

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], topic = args[1];
        int count = Integer.parseInt(args[2]);
        Properties p = new Properties();
        p.put("bootstrap.servers", bootstrap);
        p.put("security.protocol", "SASL_PLAINTEXT");
        p.put("sasl.mechanism", "OAUTHBEARER");
        p.put("sasl.jaas.config", "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
        p.put("sasl.login.callback.handler.class", TokenHandler.class.getName());
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "20000");
        try (KafkaProducer<String, String> prod = new KafkaProducer<>(p)) {
            for (int i = 0; i < count; i++) prod.send(new ProducerRecord<>(topic, "v" + i)).get();
        } catch (java.util.concurrent.ExecutionException e) {
            if (e.getCause() instanceof SaslAuthenticationException) {
                System.out.println("AUTH " + e.getCause().getClass().getSimpleName() + ": " + e.getCause().getMessage());
                return;
            }
            throw e;
        } catch (SaslAuthenticationException e) {
            System.out.println("AUTH " + e.getClass().getSimpleName() + ": " + e.getMessage());
            return;
        }
        System.out.println("OK " + count);
    }
}
