package io.skade.table;

import io.skade.catalog.CatalogConnection;
import io.skade.lineage.CatalogLineage;
import io.skade.sink.SinkMaintenance;
import io.skade.source.SkadeSourceBuilder;
import java.time.Duration;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.table.factories.FactoryUtil;

/** The options of skade tables ({@code 'connector'='skade'}) and of the {@code skade} catalog. */
public final class SkadeConnectorOptions {
  private SkadeConnectorOptions() {}

  public static final ConfigOption<String> WAREHOUSE =
      ConfigOptions.key("warehouse")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Warehouse root (a local path or a URI) holding the tables' files, for a"
                  + " catalog opened in this JVM; not with 'uri'.");

  public static final ConfigOption<String> URI =
      ConfigOptions.key(CatalogConnection.URI)
          .stringType()
          .noDefaultValue()
          .withDescription(
              "The skade server that owns the catalog (http:// or https://), or the"
                  + " comma-separated addresses of a server group's members, whose leader is"
                  + " followed; the catalog's tables are then reached through it, not in this"
                  + " JVM.");

  public static final ConfigOption<String> TOKEN =
      ConfigOptions.key(CatalogConnection.TOKEN)
          .stringType()
          .noDefaultValue()
          .withDescription("With 'uri': the bearer token the server accepts.");

  public static final ConfigOption<Duration> SERVER_RETRY_TIMEOUT =
      ConfigOptions.key(CatalogConnection.RETRY_TIMEOUT)
          .durationType()
          .defaultValue(Duration.ofMinutes(10))
          .withDescription(
              "With 'uri': how long a call to the server is retried through failures"
                  + " that can heal (connection refused, 5xx, time-outs) before the job fails.");

  public static final ConfigOption<String> CATALOG_PATH =
      ConfigOptions.key("catalog.path")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Local directory of the catalog's RocksDB store; <warehouse>/_catalog by"
                  + " default (required when the warehouse is not a local path).");

  public static final ConfigOption<String> DATABASE =
      ConfigOptions.key("database")
          .stringType()
          .noDefaultValue()
          .withDescription("Iceberg namespace of the table; the Flink database name by default.");

  public static final ConfigOption<String> TABLE =
      ConfigOptions.key("table")
          .stringType()
          .noDefaultValue()
          .withDescription("Iceberg table name; the Flink table name by default.");

  public static final ConfigOption<String> SCAN_STARTUP_MODE =
      ConfigOptions.key("scan.startup.mode")
          .stringType()
          .defaultValue("full")
          .withDescription(
              "Where a read starts without a checkpoint: 'full' (the current rows as"
                  + " inserts, then every change), 'latest' (changes committed after the start),"
                  + " 'earliest' (every change since the first snapshot), 'from-snapshot',"
                  + " 'from-timestamp' or 'from-commit-seq' (each with its own option), or"
                  + " 'from-consumer' (after the cursor scan.consumer-id stored in the catalog).");

  public static final ConfigOption<Long> SCAN_STARTUP_SNAPSHOT_ID =
      ConfigOptions.key("scan.startup.snapshot-id")
          .longType()
          .noDefaultValue()
          .withDescription(
              "With scan.startup.mode 'from-snapshot': the first snapshot whose"
                  + " changes are read.");

  public static final ConfigOption<Long> SCAN_STARTUP_TIMESTAMP_MILLIS =
      ConfigOptions.key("scan.startup.timestamp-millis")
          .longType()
          .noDefaultValue()
          .withDescription(
              "With scan.startup.mode 'from-timestamp': changes of the snapshots"
                  + " committed at or after this epoch time in milliseconds.");

  public static final ConfigOption<Long> SCAN_STARTUP_COMMIT_SEQ =
      ConfigOptions.key("scan.startup.commit-seq")
          .longType()
          .noDefaultValue()
          .withDescription(
              "With scan.startup.mode 'from-commit-seq': changes of the commits after"
                  + " this catalog commit_seq.");

  public static final ConfigOption<Boolean> SCAN_BOUNDED =
      ConfigOptions.key("scan.bounded")
          .booleanType()
          .defaultValue(false)
          .withDescription(
              "Stop at the snapshot current when the job starts. Batch runtime mode"
                  + " is always bounded.");

  public static final ConfigOption<Boolean> SCAN_APPEND_ONLY =
      ConfigOptions.key("scan.append-only")
          .booleanType()
          .defaultValue(false)
          .withDescription(
              "Read inserts only: the source declares an insert-only changelog, which"
                  + " Flink's delta join needs, and a commit that updates or deletes rows fails the job"
                  + " naming the commit.");

  public static final ConfigOption<Long> SCAN_END_SNAPSHOT_ID =
      ConfigOptions.key("scan.end.snapshot-id")
          .longType()
          .noDefaultValue()
          .withDescription(
              "The last snapshot read (implies scan.bounded); with 'full', the rows as"
                  + " of this snapshot.");

  public static final ConfigOption<String> SCAN_TAG =
      ConfigOptions.key("scan.tag")
          .stringType()
          .noDefaultValue()
          .withDescription("Read the rows of the snapshot this tag points at (bounded).");

  public static final ConfigOption<String> SCAN_BRANCH =
      ConfigOptions.key("scan.branch")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Read the rows of this branch's head as the query is planned (bounded).");

  public static final ConfigOption<String> SCAN_START_TAG =
      ConfigOptions.key("scan.start-tag")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Read the changes committed after the snapshot this tag points at (streaming);"
                  + " with scan.end-tag, the changes between the two tags.");

  public static final ConfigOption<String> SCAN_END_TAG =
      ConfigOptions.key("scan.end-tag")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "The last snapshot read is the one this tag points at (implies scan.bounded).");

  public static final ConfigOption<Duration> SCAN_POLL_INTERVAL =
      ConfigOptions.key("scan.poll-interval")
          .durationType()
          .defaultValue(SkadeSourceBuilder.DEFAULT_POLL_INTERVAL)
          .withDescription(
              "Safety poll of the commit log. In the JVM that owns the catalog, commits"
                  + " arrive at once through the commit feed; elsewhere this is the read latency.");

  public static final ConfigOption<String> SCAN_TABLES =
      ConfigOptions.key("scan.tables")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Makes the table a database changelog: the changes of every table whose whole"
                  + " name (namespace.name) matches this regular expression, tables created later"
                  + " included, in the catalog's commit order; declared (table_name STRING, data"
                  + " STRING), each row as a JSON object.");

  public static final ConfigOption<String> SCAN_CONSISTENCY =
      ConfigOptions.key("scan.consistency")
          .stringType()
          .defaultValue("table")
          .withDescription(
              "With scan.tables: 'table' (each table's commits in order) or 'commit' (every"
                  + " atomic commit whole before the next, across all tables).");

  public static final ConfigOption<String> SCAN_CONSUMER_ID =
      ConfigOptions.key("scan.consumer-id")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Id under which the job's read position is stored in the catalog at"
                  + " each checkpoint, holding back the expiry of snapshots it still needs; derived"
                  + " from the job name and the table by default.");

  public static final ConfigOption<String> CHANGELOG_MODE =
      ConfigOptions.key("changelog.mode")
          .stringType()
          .defaultValue("per-snapshot")
          .withDescription(
              "'per-snapshot': every change of every commit, in commit order;"
                  + " 'collapsed': the net change of each window of commits read at once.");

  public static final ConfigOption<String> CHANGELOG_BEFORE_IMAGE =
      ConfigOptions.key("changelog.before-image")
          .stringType()
          .defaultValue("full")
          .withDescription(
              "'full': -U and -D rows carry the whole old row (changelog mode"
                  + " +I -U +U -D, no ChangelogNormalize); 'key-only': deletes carry only the primary"
                  + " key and no -U rows are emitted (upsert mode; needs a primary key).");

  public static final ConfigOption<Boolean> LOOKUP_ASYNC =
      ConfigOptions.key("lookup.async")
          .booleanType()
          .defaultValue(false)
          .withDescription(
              "Probe asynchronously: several probes of one task in flight on a pool of"
                  + " 'lookup.async.threads' threads.");

  public static final ConfigOption<Integer> LOOKUP_ASYNC_THREADS =
      ConfigOptions.key("lookup.async.threads")
          .intType()
          .defaultValue(4)
          .withDescription("Threads per lookup task probing for the asynchronous lookup function.");

  public static final ConfigOption<Long> LOOKUP_SNAPSHOT_ID =
      ConfigOptions.key("lookup.snapshot-id")
          .longType()
          .noDefaultValue()
          .withDescription("Pin lookups to this snapshot instead of the latest commit.");

  public static final ConfigOption<Duration> LOOKUP_POLL_INTERVAL =
      ConfigOptions.key("lookup.poll-interval")
          .durationType()
          .defaultValue(Duration.ofSeconds(1))
          .withDescription(
              "In a process that does not own the catalog, how often lookups check the"
                  + " commit log for a new snapshot. In the owner, a commit is seen by the next probe."
                  + " 0 s: every probe sees every commit durable when it began, in any process (through"
                  + " a server at the cost of a round trip, shared by concurrent probes); the default"
                  + " with scan.append-only, which a delta join relies on.");

  public static final ConfigOption<Long> LOOKUP_ROW_CACHE_MAX_ROWS =
      ConfigOptions.key("lookup.row-cache.max-rows")
          .longType()
          .defaultValue(0L)
          .withDescription(
              "Keys kept by skade's row cache of joined rows, keyed by snapshot and key"
                  + " and so never stale (used when 'lookup.cache' is NONE; 0, the default, turns it"
                  + " off). Probes already keep the decoded Parquet pages they read, which is cheaper for"
                  + " keys spread over the table; the row cache pays off for a few hot keys.");

  public static final ConfigOption<Boolean> LOOKUP_DISK_CACHE_ENABLED =
      ConfigOptions.key("lookup.disk-cache.enabled")
          .booleanType()
          .defaultValue(true)
          .withDescription(
              "Whether probes of a table on remote storage (S3, HDFS) keep the byte ranges they"
                  + " read from its data files (footers, page indexes, bloom filters, pages) on"
                  + " local disk, in 'lookup.disk-cache.dir', shared by the lookups of a TaskManager"
                  + " and safely by several processes; data files never change, so a kept range is"
                  + " never stale. A table on local disk is probed in place without it.");

  public static final ConfigOption<String> LOOKUP_DISK_CACHE_DIR =
      ConfigOptions.key("lookup.disk-cache.dir")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "The local directory of the lookup disk cache ('lookup.disk-cache.enabled'). Unset"
                  + " (the default): skade-lookup-cache-<user> in the JVM's temporary directory"
                  + " (java.io.tmpdir, which Flink's io.tmp.dirs defaults to).");

  public static final ConfigOption<MemorySize> LOOKUP_DISK_CACHE_MAX_BYTES =
      ConfigOptions.key("lookup.disk-cache.max-bytes")
          .memoryType()
          .defaultValue(MemorySize.parse("1 gb"))
          .withDescription(
              "The bound of 'lookup.disk-cache.dir' per process; past it the least recently used"
                  + " ranges are deleted.");

  public static final ConfigOption<Duration> LOOKUP_AS_OF_RETENTION =
      ConfigOptions.key("lookup.as-of.retention")
          .durationType()
          .noDefaultValue()
          .withDescription(
              "For lookup joins as of a time (ON ... AND d.as_of = p.event_time): how far back"
                  + " they reach. The snapshots current since then are held from expiry (a consumer"
                  + " the catalog's expiry guard honours) and a probe older than that fails the job"
                  + " naming its time. Unset: nothing is held, and a probe is answered while the"
                  + " table still holds the snapshot current at its time.");

  /** Flink's own {@code scan.parallelism}: the readers' parallelism. */
  public static final ConfigOption<Integer> SCAN_PARALLELISM = FactoryUtil.SOURCE_PARALLELISM;

  /** Flink's own {@code sink.parallelism}. */
  public static final ConfigOption<Integer> SINK_PARALLELISM = FactoryUtil.SINK_PARALLELISM;

  public static final ConfigOption<String> SINK_BRANCH =
      ConfigOptions.key("sink.branch")
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Commit to this branch of the table (which must exist) instead of main.");

  public static final ConfigOption<Integer> BUCKET =
      ConfigOptions.key(TableBuckets.BUCKET)
          .intType()
          .noDefaultValue()
          .withDescription(
              "A new table's number of buckets: Iceberg's bucket(key, N) partitioning,"
                  + " so CDC reads run in parallel with each key's changes in order, writers own whole"
                  + " buckets and a lookup reads one bucket. Without it a new table is not bucketed.");

  public static final ConfigOption<String> BUCKET_KEY =
      ConfigOptions.key(TableBuckets.BUCKET_KEY)
          .stringType()
          .noDefaultValue()
          .withDescription(
              "The column a new table is bucketed by: by default its primary key (of"
                  + " one column); a primary key column of a composite key, or any column of a table"
                  + " without a key.");

  public static final ConfigOption<Boolean> MAINTENANCE_ENABLED =
      ConfigOptions.key("maintenance.enabled")
          .booleanType()
          .defaultValue(false)
          .withDescription(
              "Whether the sink maintains the table after its commits, on Iceberg's"
                  + " Flink table maintenance: compaction folding deletes into the data files, snapshot"
                  + " expiry (kept back by live consumers) and orphan cleanup.");

  public static final ConfigOption<Integer> MAINTENANCE_COMPACT_DATA_FILES =
      ConfigOptions.key("maintenance.compact.data-files")
          .intType()
          .defaultValue(SinkMaintenance.NONE.compactDataFiles())
          .withDescription(
              "Compact once this many data files were added since the last compaction.");

  public static final ConfigOption<Integer> MAINTENANCE_COMPACT_DELETE_FILES =
      ConfigOptions.key("maintenance.compact.delete-files")
          .intType()
          .defaultValue(SinkMaintenance.NONE.compactDeleteFiles())
          .withDescription(
              "Compact once this many delete files were added since the last"
                  + " compaction; a data file is rewritten when this many delete files apply to it.");

  public static final ConfigOption<Duration> MAINTENANCE_SNAPSHOT_MAX_AGE =
      ConfigOptions.key("maintenance.snapshot.max-age")
          .durationType()
          .defaultValue(SinkMaintenance.NONE.snapshotMaxAge())
          .withDescription("Expire snapshots older than this (a consumer's snapshots are kept).");

  public static final ConfigOption<Integer> MAINTENANCE_SNAPSHOT_RETAIN_LAST =
      ConfigOptions.key("maintenance.snapshot.retain-last")
          .intType()
          .defaultValue(SinkMaintenance.NONE.retainLast())
          .withDescription("The newest snapshots kept whatever their age.");

  public static final ConfigOption<Duration> MAINTENANCE_ORPHAN_MIN_AGE =
      ConfigOptions.key("maintenance.orphan.min-age")
          .durationType()
          .defaultValue(SinkMaintenance.NONE.orphanMinAge())
          .withDescription(
              "Delete files no snapshot references once they are this old (1 h at"
                  + " least, so no file of a commit in flight is taken for an orphan).");

  public static final ConfigOption<Duration> MAINTENANCE_INTERVAL =
      ConfigOptions.key("maintenance.interval")
          .durationType()
          .defaultValue(SinkMaintenance.NONE.interval())
          .withDescription("The least time between two maintenance tasks.");

  /** The catalog's default database ({@code default}). */
  public static final ConfigOption<String> LINEAGE_SINK =
      ConfigOptions.key(CatalogLineage.SINK)
          .stringType()
          .defaultValue("none")
          .withDescription(
              "Where the catalog records the lineage of every commit: 'none', 'table'"
                  + " (rows of skade_system.lineage_events in the catalog) or 'openlineage' (see"
                  + " lineage.openlineage.url). A catalog setting: every table of one warehouse in a"
                  + " JVM must agree.");

  public static final ConfigOption<String> LINEAGE_OPENLINEAGE_URL =
      ConfigOptions.key(CatalogLineage.OPENLINEAGE_URL)
          .stringType()
          .noDefaultValue()
          .withDescription(
              "With lineage.sink 'openlineage': an OpenLineage collector's http(s)://"
                  + " URL (events go to its /api/v1/lineage), file:<path> (JSON lines) or console.");

  public static final ConfigOption<String> LINEAGE_ACTOR =
      ConfigOptions.key(CatalogLineage.ACTOR)
          .stringType()
          .noDefaultValue()
          .withDescription(
              "Who the lineage names as the writer: on a table, of the commits its"
                  + " sink makes (the Flink job's name and id otherwise); on a catalog, of commits whose"
                  + " writer names none ('skade' otherwise).");

  public static final ConfigOption<String> DEFAULT_DATABASE =
      ConfigOptions.key("default-database")
          .stringType()
          .defaultValue("default")
          .withDescription(
              "The catalog's default database (Iceberg namespace), created when" + " missing.");
}
