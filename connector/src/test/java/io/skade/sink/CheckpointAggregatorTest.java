package io.skade.sink;

import static org.assertj.core.api.Assertions.assertThat;

import io.skade.testing.IdRows;
import io.skade.testing.TestCatalog;
import io.skade.write.TableWriter;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.flink.core.io.SimpleVersionedSerialization;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.streaming.api.connector.sink2.CommittableMessage;
import org.apache.flink.streaming.api.connector.sink2.CommittableSummary;
import org.apache.flink.streaming.api.connector.sink2.CommittableWithLineage;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.iceberg.ContentFile;
import org.apache.iceberg.DeleteFile;
import org.apache.iceberg.FileFormat;
import org.apache.iceberg.FileMetadata;
import org.apache.iceberg.Table;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.flink.sink.DeltaManifests;
import org.apache.iceberg.flink.sink.DeltaManifestsSerializer;
import org.apache.iceberg.flink.sink.FlinkManifestUtil;
import org.apache.iceberg.flink.sink.IcebergCommittableSerializer;
import org.apache.iceberg.io.WriteResult;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The sink's pre-commit aggregator keeps each checkpoint's write results apart: when a checkpoint
 * was aborted after the writers flushed for it, so that its results reach the aggregator together
 * with the next checkpoint's, each checkpoint still becomes its own committable (which Iceberg's
 * committer commits as its own row delta), so the later flush's equality deletes apply to the
 * earlier flush's rows. Iceberg's own aggregator merges them into one.
 */
class CheckpointAggregatorTest {
  @RegisterExtension final TestCatalog catalog = new TestCatalog();

  @Test
  void theResultsOfAnAbortedCheckpointAreCommittedApartFromTheNextCheckpoints() throws Exception {
    Table table = catalog.get().createTable(TableIdentifier.of("db", "t"), IdRows.SCHEMA);
    TableWriter writer = new TableWriter(table);
    WriteResult third =
        WriteResult.builder()
            .addDataFiles(writer.writeDataFiles(List.of(IdRows.row(1, "a"))))
            .build();
    WriteResult fourth =
        WriteResult.builder()
            .addDataFiles(writer.writeDataFiles(List.of(IdRows.row(1, "b"))))
            .addDeleteFiles(equalityDelete(table))
            .build();
    WriteResult endOfInput =
        WriteResult.builder()
            .addDataFiles(writer.writeDataFiles(List.of(IdRows.row(2, "c"))))
            .build();
    SimpleVersionedSerializer<Object> committables = committableSerializer();

    OneInputStreamOperatorTestHarness<CommittableMessage<WriteResult>, CommittableMessage<Object>>
        harness =
            new OneInputStreamOperatorTestHarness<>(
                new CheckpointAggregator(
                    new PlannedTableLoader(table),
                    CheckpointAggregatorTest::committableSerializer));
    harness.open();
    // Checkpoint 3 was aborted after the writers flushed: its results arrive with checkpoint 4's.
    harness.processElement(new StreamRecord<>(new CommittableWithLineage<>(third, 3, 0)));
    harness.processElement(new StreamRecord<>(new CommittableWithLineage<>(fourth, 4, 1)));
    harness.prepareSnapshotPreBarrier(4);
    List<CommittableMessage<Object>> atFour = drain(harness);
    harness.prepareSnapshotPreBarrier(5); // nothing came
    List<CommittableMessage<Object>> atFive = drain(harness);
    harness.processElement(
        new StreamRecord<>(new CommittableWithLineage<>(endOfInput, CommittableMessage.EOI, 0)));
    harness.close(); // finishes: the writers' end of input, after checkpoint 5
    List<CommittableMessage<Object>> atEnd = drain(harness);

    assertThat(summaries(atFour)).containsExactly(3L, 4L);
    assertThat(checkpoints(atFour)).containsExactly(3L, 4L);
    List<WriteResult> committed = results(atFour, table, committables);
    assertThat(files(committed.get(0))).containsExactlyElementsOf(files(third));
    assertThat(files(committed.get(1))).containsExactlyInAnyOrderElementsOf(files(fourth));

    assertThat(checkpoints(atFive)).as("an empty committable for checkpoint 5").containsExactly(5L);
    assertThat(files(results(atFive, table, committables).get(0))).isEmpty();

    assertThat(checkpoints(atEnd)).containsExactly(6L);
    assertThat(files(results(atEnd, table, committables).get(0)))
        .containsExactlyElementsOf(files(endOfInput));
  }

  private static List<CommittableMessage<Object>> drain(
      OneInputStreamOperatorTestHarness<CommittableMessage<WriteResult>, CommittableMessage<Object>>
          harness) {
    List<CommittableMessage<Object>> emitted = List.copyOf(harness.extractOutputValues());
    harness.getOutput().clear();
    return emitted;
  }

  private static DeleteFile equalityDelete(Table table) {
    return FileMetadata.deleteFileBuilder(table.spec())
        .ofEqualityDeletes(1)
        .withPath(table.location() + "/data/eq-delete-1.parquet")
        .withFormat(FileFormat.PARQUET)
        .withFileSizeInBytes(100)
        .withRecordCount(1)
        .build();
  }

  /** Iceberg's committable serializer, whose type is public but whose committable is not. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  private static SimpleVersionedSerializer<Object> committableSerializer() {
    return (SimpleVersionedSerializer) new IcebergCommittableSerializer();
  }

  private static List<Long> summaries(List<CommittableMessage<Object>> messages) {
    return messages.stream()
        .filter(CommittableSummary.class::isInstance)
        .map(CommittableMessage::getCheckpointIdOrEOI)
        .toList();
  }

  private static List<Long> checkpoints(List<CommittableMessage<Object>> messages) {
    return messages.stream()
        .filter(CommittableWithLineage.class::isInstance)
        .map(CommittableMessage::getCheckpointIdOrEOI)
        .toList();
  }

  /** The files each committable of {@code messages} holds, read back from its manifests. */
  private static List<WriteResult> results(
      List<CommittableMessage<Object>> messages,
      Table table,
      SimpleVersionedSerializer<Object> committables)
      throws IOException {
    List<WriteResult> results = new ArrayList<>();
    for (CommittableMessage<Object> message : messages) {
      if (message instanceof CommittableWithLineage<Object> committable) {
        DataInputDeserializer in =
            new DataInputDeserializer(committables.serialize(committable.getCommittable()));
        in.readUTF(); // the job id
        in.readUTF(); // the operator id
        in.readLong(); // the checkpoint id
        byte[] manifest = new byte[in.readInt()];
        in.readFully(manifest);
        if (manifest.length == 0) {
          results.add(WriteResult.builder().build());
        } else {
          DeltaManifests delta =
              SimpleVersionedSerialization.readVersionAndDeSerialize(
                  DeltaManifestsSerializer.INSTANCE, manifest);
          results.add(FlinkManifestUtil.readCompletedFiles(delta, table.io(), table.specs()));
        }
      }
    }
    return results;
  }

  private static List<String> files(WriteResult result) {
    return Stream.concat(Stream.of(result.dataFiles()), Stream.of(result.deleteFiles()))
        .map(ContentFile::location)
        .toList();
  }
}
