package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.server.ServerProcess;
import io.skade.testing.RemoteCatalog;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.iceberg.catalog.Namespace;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A {@link SkadeMultiTableSink} through a skade server whose transaction commit loses one HTTP
 * exchange for real ({@link FaultProxy}): lost before the server saw it, the restarted job commits
 * the checkpoint once; lost after the server committed it (its answer lost), the restarted
 * committer finds the checkpoint on the tables and skips it. Either way every row is in the three
 * tables once, one transaction per checkpoint.
 */
class SkadeMultiTableSinkRemoteTest {
  private static final long TRANSACTIONS = 1_500;

  @TempDir Path root;

  @ParameterizedTest
  @EnumSource(FaultProxy.Fault.class)
  @Timeout(300)
  void aTransactionWhoseExchangeIsLostLandsOnce(FaultProxy.Fault fault) throws Exception {
    try (RemoteCatalog remote = RemoteCatalog.start(root);
        FaultProxy proxy =
            new FaultProxy(
                URI.create(remote.server().uri()), "POST /v1/transactions/commit ", fault)) {
      remote.rest().createNamespace(Namespace.of("shop"));
      ThreeTables.create(remote.rest());
      ThreeTables.Faults.set(new long[0], null);

      Configuration conf = new Configuration();
      conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 5);
      conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
      StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
      env.enableCheckpointing(200);
      Map<String, String> throughProxy =
          Map.of("uri", proxy.uri(), "token", ServerProcess.TOKEN, "server.retry-timeout", "1 min");
      ThreeTables.job(env, throughProxy, TRANSACTIONS, 1_000, 2);
      env.execute("three tables through a server");

      assertThat(proxy.lost()).as("exchanges the proxy lost").isEqualTo(1);
      try (CatalogConnection connection = CatalogConnection.open(remote.properties())) {
        assertThat(
                ThreeTables.assertWrittenOnceInOneTransactionPerCheckpoint(
                    remote.rest(), connection::commitOf, TRANSACTIONS))
            .as("checkpoints that wrote several tables")
            .isGreaterThan(2);
      }
    }
  }
}
