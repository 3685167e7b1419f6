// Admin client calls Kafka's command-line tools do not make on their own,
// one per run, printed line by line for test_admin_tools.py:
//   AdminCalls BOOTSTRAP list-config-resources [TYPE...]   ("TYPE NAME" lines)
// An exception prints "ERROR <class>: <message>" instead.
import java.util.HashSet;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListConfigResourcesOptions;
import org.apache.kafka.common.config.ConfigResource;

public class AdminCalls {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        try (Admin admin = Admin.create(p)) {
            if (!args[1].equals("list-config-resources"))
                throw new IllegalArgumentException("unknown call " + args[1]);
            Set<ConfigResource.Type> types = new HashSet<>();
            for (int i = 2; i < args.length; i++)
                types.add(ConfigResource.Type.valueOf(args[i]));
            try {
                for (ConfigResource r : admin.listConfigResources(types,
                        new ListConfigResourcesOptions()).all().get())
                    System.out.println(r.type() + " " + r.name());
            } catch (ExecutionException e) {
                System.out.println("ERROR " + e.getCause().getClass().getSimpleName() + ": "
                        + e.getCause().getMessage());
            }
        }
    }
}
