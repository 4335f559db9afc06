package io.skade.lookup;

/**
 * What point lookups cost, summed over the probes counted: I/O on data files (the calls Parquet
 * made, the bytes they returned, the streams opened), the rows decoded from them, and where the
 * bytes of files on remote storage came from (the store or the local disk cache).
 *
 * @param probes lookups answered
 * @param bytesRead bytes read from data files
 * @param readCalls read calls on data files
 * @param fileOpens data file streams opened
 * @param rowsDecoded rows decoded from data files (before the key and deletes are applied)
 * @param filesRead data files that survived pruning and were opened
 * @param remoteReads reads from remote storage (ranged GETs on S3); a local file's reads are not
 *     counted here
 * @param remoteBytes bytes read from remote storage
 * @param diskCacheHits reads of a remote file that the disk cache served
 * @param diskCacheHitBytes bytes the disk cache served
 * @param diskCacheMisses reads of a remote file that the disk cache could not serve (each then a
 *     remote read)
 * @param diskCacheMissBytes bytes the disk cache could not serve
 * @param filesFetchedAhead new data files opened ahead of their first probe, when a commit added
 *     them (their footers and indexes read in the background)
 */
public record LookupStats(
    long probes,
    long bytesRead,
    long readCalls,
    long fileOpens,
    long rowsDecoded,
    long filesRead,
    long remoteReads,
    long remoteBytes,
    long diskCacheHits,
    long diskCacheHitBytes,
    long diskCacheMisses,
    long diskCacheMissBytes,
    long filesFetchedAhead) {

  /** Counts of probes of local files: nothing remote, no disk cache, nothing fetched ahead. */
  public LookupStats(
      long probes,
      long bytesRead,
      long readCalls,
      long fileOpens,
      long rowsDecoded,
      long filesRead) {
    this(probes, bytesRead, readCalls, fileOpens, rowsDecoded, filesRead, 0, 0, 0, 0, 0, 0, 0);
  }

  /** What happened between {@code earlier} and this. */
  public LookupStats minus(LookupStats earlier) {
    return new LookupStats(
        probes - earlier.probes,
        bytesRead - earlier.bytesRead,
        readCalls - earlier.readCalls,
        fileOpens - earlier.fileOpens,
        rowsDecoded - earlier.rowsDecoded,
        filesRead - earlier.filesRead,
        remoteReads - earlier.remoteReads,
        remoteBytes - earlier.remoteBytes,
        diskCacheHits - earlier.diskCacheHits,
        diskCacheHitBytes - earlier.diskCacheHitBytes,
        diskCacheMisses - earlier.diskCacheMisses,
        diskCacheMissBytes - earlier.diskCacheMissBytes,
        filesFetchedAhead - earlier.filesFetchedAhead);
  }
}
