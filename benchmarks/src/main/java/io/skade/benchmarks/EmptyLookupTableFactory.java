package io.skade.benchmarks;

import java.util.Collection;
import java.util.List;
import java.util.Set;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.LookupTableSource;
import org.apache.flink.table.connector.source.lookup.LookupFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSourceFactory;
import org.apache.flink.table.functions.LookupFunction;

/**
 * A lookup table that holds nothing ({@code 'connector' = 'empty-lookup'}): every probe misses at
 * once. The lookup-join benchmark joins it to tell Flink's own cost of a lookup-join pipeline
 * (planning the join, its operator) apart from what a dimension store adds.
 */
public final class EmptyLookupTableFactory implements DynamicTableSourceFactory {
  @Override
  public String factoryIdentifier() {
    return "empty-lookup";
  }

  @Override
  public Set<ConfigOption<?>> requiredOptions() {
    return Set.of();
  }

  @Override
  public Set<ConfigOption<?>> optionalOptions() {
    return Set.of();
  }

  @Override
  public DynamicTableSource createDynamicTableSource(Context context) {
    return new EmptyLookup();
  }

  /** Flink instantiates lookup functions by reflection: public. */
  public static final class NoRows extends LookupFunction {
    @Override
    public Collection<RowData> lookup(RowData keyRow) {
      return List.of();
    }
  }

  private static final class EmptyLookup implements LookupTableSource {
    @Override
    public LookupRuntimeProvider getLookupRuntimeProvider(LookupContext context) {
      return LookupFunctionProvider.of(new NoRows());
    }

    @Override
    public DynamicTableSource copy() {
      return new EmptyLookup();
    }

    @Override
    public String asSummaryString() {
      return "empty lookup table";
    }
  }
}
