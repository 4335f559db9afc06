package io.skade.lineage.flink;

import io.skade.catalog.SkadeCatalog;
import io.skade.lineage.CatalogLineage;
import io.skade.lineage.CommitLineage;
import io.skade.lineage.LineageDataset;
import java.util.List;
import java.util.Map;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.streaming.api.lineage.LineageDatasetFacet;
import org.apache.flink.streaming.api.lineage.LineageVertex;
import org.apache.flink.streaming.api.lineage.SourceLineageVertex;
import org.apache.iceberg.catalog.TableIdentifier;

/**
 * skade tables as Flink's lineage API (FLIP-314) sees them: a dataset named by its identifier in
 * its catalog's warehouse, and the vertices of skade's source and sink.
 */
public final class FlinkLineage {
  private FlinkLineage() {}

  /** A skade table as a Flink lineage dataset. */
  public record Dataset(String namespace, String name)
      implements org.apache.flink.streaming.api.lineage.LineageDataset {
    @Override
    public Map<String, LineageDatasetFacet> facets() {
      return Map.of();
    }
  }

  /** A source's vertex: what it reads, and whether it ends. */
  public record SourceVertex(
      Boundedness boundedness, List<org.apache.flink.streaming.api.lineage.LineageDataset> datasets)
      implements SourceLineageVertex {}

  /** A sink's vertex: what it writes. */
  public record SinkVertex(List<org.apache.flink.streaming.api.lineage.LineageDataset> datasets)
      implements LineageVertex {}

  /** The dataset of table {@code table} in the catalog of {@code warehouse}. */
  public static Dataset dataset(String warehouse, TableIdentifier table) {
    return new Dataset(warehouse, table.toString());
  }

  /**
   * A dataset of Flink's lineage graph ({@code namespace}, {@code name}) as skade's lineage names
   * it: a skade table, with its location and columns, when the namespace is the warehouse of a
   * skade catalog open in this JVM with lineage (as skade's own vertices name tables), else an
   * external dataset whose system is its namespace's URI scheme (or the namespace itself).
   */
  public static LineageDataset fromFlink(String namespace, String name) {
    for (CatalogLineage.Running running : CatalogLineage.running()) {
      SkadeCatalog catalog = running.catalog();
      if (catalog.warehouse().equals(namespace)) {
        return CommitLineage.table(catalog, TableIdentifier.parse(name));
      }
    }
    int scheme = namespace.indexOf("://");
    return LineageDataset.external(
        scheme > 0 ? namespace.substring(0, scheme) : namespace, namespace, name);
  }
}
