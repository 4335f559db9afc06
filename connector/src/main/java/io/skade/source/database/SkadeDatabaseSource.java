package io.skade.source.database;

import io.skade.catalog.CatalogConnection;
import io.skade.catalog.SkadeCatalog;
import io.skade.changelog.ChangelogOptions;
import io.skade.lineage.flink.FlinkLineage;
import io.skade.sink.TableRow;
import io.skade.source.database.enumerator.DatabaseEnumerator;
import io.skade.source.database.enumerator.DatabaseEnumeratorState;
import io.skade.source.database.enumerator.DatabaseEnumeratorStateSerializer;
import io.skade.source.database.reader.DatabaseSourceReader;
import io.skade.source.database.split.CommitSplit;
import io.skade.source.database.split.CommitSplitSerializer;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.LineageVertexProvider;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * A Flink source of the changes of several tables of one skade catalog — named tables, a namespace,
 * or the tables whose name matches a pattern, tables created later included — in the catalog's
 * commit order: each change with its table, row kind, row, {@code commit_seq}, snapshot and commit
 * time. Build one with {@link #builder()}.
 *
 * <p>Each table's commits are read in order by one reader, so a key's changes leave the source in
 * order. With {@link Consistency#COMMIT} every change of commit N leaves the source before any of
 * commit N+1, across all tables, and an atomic commit of several tables arrives whole. In both
 * modes a checkpoint falls between two commits, never inside one: a job that writes what it reads
 * transactionally (a {@code SkadeMultiTableSink}) commits each source commit whole.
 *
 * @param <T> the emitted type
 */
public final class SkadeDatabaseSource<T>
    implements Source<T, CommitSplit, DatabaseEnumeratorState>,
        ResultTypeQueryable<T>,
        LineageVertexProvider {
  private static final long serialVersionUID = 1L;

  private final Map<String, String> catalogProperties;
  private final String location;
  private final DatabaseEnumerator.Settings settings;
  private final DatabaseChangeDeserializer<T> deserializer;

  /** The tables selected when the source was built, for Flink's lineage graph. */
  private final List<String> tables;

  SkadeDatabaseSource(
      Map<String, String> catalogProperties,
      String location,
      DatabaseEnumerator.Settings settings,
      DatabaseChangeDeserializer<T> deserializer,
      List<String> tables) {
    this.catalogProperties = new HashMap<>(catalogProperties);
    this.location = location;
    this.settings = settings;
    this.deserializer = deserializer;
    this.tables = List.copyOf(tables);
  }

  /** A builder; see {@link SkadeDatabaseSourceBuilder}. */
  public static SkadeDatabaseSourceBuilder<TableRow> builder() {
    return new SkadeDatabaseSourceBuilder<>();
  }

  @Override
  public Boundedness getBoundedness() {
    return Boundedness.CONTINUOUS_UNBOUNDED;
  }

  @Override
  public SplitEnumerator<CommitSplit, DatabaseEnumeratorState> createEnumerator(
      SplitEnumeratorContext<CommitSplit> context) {
    return restoreEnumerator(context, null);
  }

  @Override
  public SplitEnumerator<CommitSplit, DatabaseEnumeratorState> restoreEnumerator(
      SplitEnumeratorContext<CommitSplit> context, DatabaseEnumeratorState checkpoint) {
    return new DatabaseEnumerator(
        context,
        CatalogConnection.open(SkadeCatalog.inTask(catalogProperties)),
        settings,
        checkpoint);
  }

  @Override
  public SourceReader<T, CommitSplit> createReader(SourceReaderContext context) {
    return new DatabaseSourceReader<>(
        context,
        CatalogConnection.fileIO(catalogProperties),
        ChangelogOptions.defaults(),
        deserializer);
  }

  @Override
  public SimpleVersionedSerializer<CommitSplit> getSplitSerializer() {
    return new CommitSplitSerializer();
  }

  @Override
  public SimpleVersionedSerializer<DatabaseEnumeratorState> getEnumeratorCheckpointSerializer() {
    return new DatabaseEnumeratorStateSerializer();
  }

  @Override
  public TypeInformation<T> getProducedType() {
    return deserializer.getProducedType();
  }

  @Override
  public LineageVertex getLineageVertex() {
    return new FlinkLineage.SourceVertex(
        getBoundedness(),
        tables.stream()
            .map(table -> FlinkLineage.dataset(location, TableIdentifier.parse(table)))
            .map(org.apache.flink.streaming.api.lineage.LineageDataset.class::cast)
            .toList());
  }
}
