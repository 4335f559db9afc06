package io.skade.server;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.catalog.CatalogConnection;
import io.skade.testing.ParquetFiles;
import io.skade.testing.S3Bucket;
import io.skade.testing.S3FaultProxy;
import io.skade.testing.S3Server;
import java.io.InputStream;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.CatalogUtil;
import org.apache.iceberg.DataFile;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableMetadataParser;
import org.apache.iceberg.aws.s3.S3FileIO;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.data.GenericRecord;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.rest.RESTCatalog;
import org.apache.iceberg.types.Types;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * A client that follows commits through a server takes each commit's metadata file from the server,
 * which wrote it and keeps it, and asks the store for none: counted by a proxy in front of a real
 * S3 server. The server serves only its warehouse's metadata files; a table whose files lie
 * elsewhere is read from the store, with the same metadata.
 */
class MetadataFromServerOnS3Test {
  @RegisterExtension static final S3Bucket s3 = new S3Bucket("served").withProxy();

  private static final Schema SCHEMA =
      new Schema(Types.NestedField.required(1, "id", Types.LongType.get()));

  @TempDir static Path root;
  private static String warehouse;
  private static SkadeServer server;
  private static RESTCatalog rest;

  @BeforeAll
  static void start() throws Exception {
    warehouse = s3.warehouse("wh");
    Path tokens = Files.writeString(root.resolve("tokens"), ServerFixture.TOKEN + "\n");
    server =
        SkadeServer.start(
            new SkadeServer.Settings(
                warehouse,
                root.resolve("catalog"),
                "127.0.0.1",
                0,
                tokens,
                false,
                null,
                null,
                s3.fileIoProperties()));
    rest = new RESTCatalog();
    rest.initialize("client", uriAndToken());
    rest.createNamespace(Namespace.of("db"));
  }

  @AfterAll
  static void stop() throws Exception {
    if (rest != null) {
      rest.close();
    }
    if (server != null) {
      server.close();
    }
  }

  private static Map<String, String> uriAndToken() {
    return Map.of("uri", server.uri().toString(), "token", ServerFixture.TOKEN);
  }

  @Test
  void aClientFollowingCommitsTakesTheirMetadataFilesFromTheServer() throws Exception {
    Table table = rest.createTable(TableIdentifier.of("db", "followed"), SCHEMA);
    DataFile file = null;
    for (long id = 1; id <= 3; id++) {
      file = append(table, id);
    }
    String location = metadataLocation(table);
    String stored = storedJson(location);
    S3FaultProxy proxy = s3.proxy();

    try (FileIO io = CatalogConnection.fileIO(uriAndToken())) {
      proxy.clearRequests();
      assertThat(TableMetadataParser.toJson(TableMetadataParser.read(io, location)))
          .isEqualTo(stored);
      assertThat(proxy.requests()).noneMatch(r -> r.path().endsWith(".metadata.json"));

      // Every other file still comes from the store.
      try (InputStream data = io.newInputFile(file.location()).newStream()) {
        assertThat(data.read()).isNotNegative();
      }
      assertThat(proxy.requests()).anyMatch(r -> r.path().endsWith(".parquet"));
    }
  }

  @Test
  void aMetadataFileOutsideTheWarehouseIsReadFromTheStore() throws Exception {
    Table table =
        rest.buildTable(TableIdentifier.of("db", "elsewhere"), SCHEMA)
            .withLocation(s3.run() + "/outside/elsewhere")
            .create();
    append(table, 1);
    String location = metadataLocation(table);
    assertThat(location).doesNotStartWith(warehouse);

    HttpResponse<String> refused = ask(location);
    assertThat(refused.statusCode()).isEqualTo(404);
    assertThat(refused.body()).contains(location).contains(warehouse);

    S3FaultProxy proxy = s3.proxy();
    try (FileIO io = CatalogConnection.fileIO(uriAndToken())) {
      proxy.clearRequests();
      assertThat(TableMetadataParser.toJson(TableMetadataParser.read(io, location)))
          .isEqualTo(storedJson(location));
      assertThat(proxy.requests()).filteredOn(r -> r.path().endsWith(".metadata.json")).hasSize(1);
    }
  }

  @Test
  void aRequestWithoutALocationIsRefusedNamingTheParameter() throws Exception {
    HttpResponse<String> refused = ask(null);
    assertThat(refused.statusCode()).isEqualTo(400);
    assertThat(refused.body()).contains("'location'");
  }

  private static DataFile append(Table table, long id) throws Exception {
    GenericRecord row = GenericRecord.create(SCHEMA);
    row.setField("id", id);
    DataFile file = ParquetFiles.write(table, List.of(row));
    table.newAppend().appendFile(file).commit();
    return file;
  }

  private static String metadataLocation(Table table) {
    return ((HasTableOperations) table).operations().current().metadataFileLocation();
  }

  /** The metadata file as the store holds it, read past the proxy. */
  private static String storedJson(String location) {
    try (FileIO store =
        CatalogUtil.loadFileIO(
            S3FileIO.class.getName(), S3Server.fileIoProperties(s3.server().endpoint()), null)) {
      return TableMetadataParser.toJson(TableMetadataParser.read(store, location));
    }
  }

  private static HttpResponse<String> ask(String location) throws Exception {
    String query =
        location == null ? "" : "?location=" + URLEncoder.encode(location, StandardCharsets.UTF_8);
    return HttpClient.newHttpClient()
        .send(
            HttpRequest.newBuilder(server.uri().resolve("/skade/v1/metadata" + query))
                .header("Authorization", "Bearer " + ServerFixture.TOKEN)
                .build(),
            HttpResponse.BodyHandlers.ofString());
  }
}
