package io.skade.write;

import java.util.HashMap;
import java.util.Map;
import org.apache.iceberg.Schema;
import org.apache.iceberg.SortOrder;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;

/**
 * How skade lays out the rows of the data files it writes ({@link TableWriter}'s files and the
 * files a compaction rewrites): in the table's sort order, or by its key when it declares none, and
 * with Parquet bloom filters on the key columns unless the table configures them. A point lookup
 * then finds a key's row group by bisecting a file's row-group bounds, and the bloom filters rule
 * out the row groups of files not sorted by the key (those of other writers).
 */
public final class FileLayout {
  private static final String BLOOM_PREFIX =
      TableProperties.PARQUET_BLOOM_FILTER_COLUMN_ENABLED_PREFIX;
  private static final String NDV_PREFIX = TableProperties.PARQUET_BLOOM_FILTER_COLUMN_NDV_PREFIX;

  private FileLayout() {}

  /**
   * The order rows of {@code table} are written in: its sort order when it has one, else ascending
   * by its identifier fields (unsorted without them).
   */
  public static SortOrder order(Table table) {
    if (table.sortOrder().isSorted()) {
      return table.sortOrder();
    }
    Schema schema = table.schema();
    SortOrder.Builder byKey = SortOrder.builderFor(schema);
    schema.identifierFieldNames().stream().sorted().forEach(byKey::asc);
    return byKey.build();
  }

  /**
   * The Parquet writer properties that add bloom filters on the identifier columns of {@code table}
   * the table does not configure itself, each sized for {@code distinctKeys} values (Parquet's
   * default size, 1 MiB per row group, would dwarf small files); to be added to the table's own
   * properties.
   */
  public static Map<String, String> keyBloomFilters(Table table, long distinctKeys) {
    Map<String, String> bloomFilters = new HashMap<>();
    for (String column : table.schema().identifierFieldNames()) {
      if (!table.properties().containsKey(BLOOM_PREFIX + column)) {
        bloomFilters.put(BLOOM_PREFIX + column, "true");
        bloomFilters.put(NDV_PREFIX + column, String.valueOf(Math.max(distinctKeys, 1)));
      }
    }
    return bloomFilters;
  }
}
