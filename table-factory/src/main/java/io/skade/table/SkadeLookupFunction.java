package io.skade.table;

import java.io.IOException;
import java.util.Collection;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.functions.FunctionContext;
import org.apache.flink.table.functions.LookupFunction;

/** The synchronous lookup function of a skade table: probes on the calling thread. */
public final class SkadeLookupFunction extends LookupFunction {
  private static final long serialVersionUID = 1L;
  private final SkadeLookup lookup;

  SkadeLookupFunction(SkadeLookup lookup) {
    this.lookup = lookup;
  }

  @Override
  public void open(FunctionContext context) {
    lookup.open(context.getMetricGroup());
  }

  @Override
  public Collection<RowData> lookup(RowData keyRow) throws IOException {
    return lookup.lookup(keyRow);
  }

  @Override
  public void close() {
    lookup.close();
  }
}
