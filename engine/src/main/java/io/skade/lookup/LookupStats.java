package io.skade.lookup;

/**
 * What point lookups cost, summed over the probes counted: I/O on data files (the calls Parquet
 * made, the bytes they returned, the streams opened) and the rows decoded from them.
 *
 * @param probes lookups answered
 * @param bytesRead bytes read from data files
 * @param readCalls read calls on data files
 * @param fileOpens data file streams opened
 * @param rowsDecoded rows decoded from data files (before the key and deletes are applied)
 * @param filesRead data files that survived pruning and were opened
 */
public record LookupStats(
    long probes, long bytesRead, long readCalls, long fileOpens, long rowsDecoded, long filesRead) {

  /** What happened between {@code earlier} and this. */
  public LookupStats minus(LookupStats earlier) {
    return new LookupStats(
        probes - earlier.probes,
        bytesRead - earlier.bytesRead,
        readCalls - earlier.readCalls,
        fileOpens - earlier.fileOpens,
        rowsDecoded - earlier.rowsDecoded,
        filesRead - earlier.filesRead);
  }
}
