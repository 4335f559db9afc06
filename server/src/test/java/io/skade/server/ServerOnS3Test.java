package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.skade.catalog.CatalogConnection;
import io.skade.testing.ParquetFiles;
import io.skade.testing.S3Server;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A server whose warehouse is on S3 (a real S3-compatible server on loopback) and whose catalog is
 * on its local disk: {@code /v1/config} hands its clients the warehouse's file-IO properties and
 * nothing else, so a client given only {@code uri} and {@code token} writes and reads the tables'
 * files.
 */
class ServerOnS3Test {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final TableIdentifier EVENTS = TableIdentifier.of("shop", "events");
  private static final Schema SCHEMA =
      new Schema(
          Types.NestedField.required(1, "id", Types.LongType.get()),
          Types.NestedField.optional(2, "name", Types.StringType.get()));

  @TempDir static Path root;
  private static S3Server s3;
  private static SkadeServer server;

  @BeforeAll
  static void start() throws Exception {
    s3 = S3Server.start(root.resolve("s3"));
    s3.bucket("lake");
    Path tokens = Files.writeString(root.resolve("tokens"), ServerFixture.TOKEN + "\n");
    Map<String, String> properties = new HashMap<>(s3.fileIoProperties());
    properties.put("consumer.expiry-timeout", "1h"); // catalog-internal: stays on the server
    server =
        SkadeServer.start(
            new SkadeServer.Settings(
                "s3://lake/warehouse",
                root.resolve("catalog"),
                "127.0.0.1",
                0,
                tokens,
                false,
                null,
                null,
                properties));
  }

  @AfterAll
  static void stop() throws Exception {
    if (server != null) {
      server.close();
    }
    if (s3 != null) {
      s3.close();
    }
  }

  private static Map<String, String> uriAndToken() {
    return Map.of("uri", server.uri().toString(), "token", ServerFixture.TOKEN);
  }

  @Test
  void theConfigHandsOutTheFileIoPropertiesAsDefaultsAndNothingElse() throws Exception {
    HttpResponse<String> answer =
        HttpClient.newHttpClient()
            .send(
                HttpRequest.newBuilder(server.uri().resolve("/v1/config"))
                    .header("Authorization", "Bearer " + ServerFixture.TOKEN)
                    .build(),
                HttpResponse.BodyHandlers.ofString());
    assertThat(answer.statusCode()).isEqualTo(200);
    JsonNode config = JSON.readTree(answer.body());
    Map<String, String> defaults = new HashMap<>();
    config
        .get("defaults")
        .fields()
        .forEachRemaining(e -> defaults.put(e.getKey(), e.getValue().asText()));
    assertThat(defaults).isEqualTo(s3.fileIoProperties());
    assertThat(answer.body())
        .doesNotContain(ServerFixture.TOKEN)
        .doesNotContain("consumer.expiry-timeout")
        .doesNotContain(root.resolve("catalog").toString());
    assertThat(config.get("overrides").get("skade.warehouse").asText())
        .isEqualTo("s3://lake/warehouse");
  }

  @Test
  void aClientGivenOnlyUriAndTokenWritesAndReadsTheTablesFilesOnS3() throws Exception {
    try (RESTCatalog rest = new RESTCatalog()) {
      rest.initialize("client", uriAndToken());
      rest.createNamespace(Namespace.of("shop"));
      Table table = rest.createTable(EVENTS, SCHEMA);
      assertThat(table.io()).isInstanceOf(S3FileIO.class);
      assertThat(table.location()).startsWith("s3://lake/warehouse/");
      List<Record> rows = new ArrayList<>();
      for (long id = 1; id <= 3; id++) {
        GenericRecord row = GenericRecord.create(SCHEMA);
        row.setField("id", id);
        row.setField("name", "event-" + id);
        rows.add(row);
      }
      DataFile file = ParquetFiles.write(table, rows);
      table.newAppend().appendFile(file).commit();

      // The data file and the metadata the server wrote are objects of the bucket.
      Path bucket = root.resolve("s3").resolve("lake");
      try (Stream<Path> objects = Files.walk(bucket)) {
        assertThat(objects.map(bucket::relativize).map(Path::toString))
            .anyMatch(name -> name.startsWith("warehouse/") && name.endsWith(".parquet"))
            .anyMatch(name -> name.startsWith("warehouse/") && name.endsWith(".metadata.json"));
      }
      // The catalog stays on the server's disk.
      assertThat(root.resolve("catalog").resolve("CURRENT")).isRegularFile();

      try (RESTCatalog other = new RESTCatalog()) {
        other.initialize("other", uriAndToken());
        assertThat(read(other.loadTable(EVENTS))).containsExactlyInAnyOrderElementsOf(rows);
      }
    }
  }

  /** A source reader's FileIO, made from the job's {@code uri} and {@code token} alone. */
  @Test
  void theFileIoOfATaskGivenOnlyUriAndTokenReadsTheServersFiles() throws Exception {
    try (RESTCatalog rest = new RESTCatalog()) {
      rest.initialize("client", uriAndToken());
      rest.createNamespace(Namespace.of("io"));
      Table table = rest.createTable(TableIdentifier.of("io", "t"), SCHEMA);
      GenericRecord row = GenericRecord.create(SCHEMA);
      row.setField("id", 7L);
      table.newAppend().appendFile(ParquetFiles.write(table, List.of(row))).commit();
      String metadata = ((HasTableOperations) table).operations().current().metadataFileLocation();

      try (FileIO io = CatalogConnection.fileIO(uriAndToken())) {
        assertThat(io.properties()).containsAllEntriesOf(s3.fileIoProperties());
        assertThat(io.newInputFile(metadata).exists()).isTrue();
        assertThat(io.newInputFile(metadata).getLength()).isPositive();
      }
    }
  }

  private static List<Record> read(Table table) throws Exception {
    List<Record> rows = new ArrayList<>();
    try (CloseableIterable<Record> read = IcebergGenerics.read(table).build()) {
      read.forEach(row -> rows.add(row.copy()));
    }
    return rows;
  }
}
