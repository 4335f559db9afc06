/**
 * skade's embedded Iceberg catalog: table pointers, a gapless commit log, namespaces, consumer
 * cursors, table locks and idempotency keys in one RocksDB store, changed through one commit path.
 *
 * <p><b>What users name.</b> {@link io.skade.catalog.SkadeCatalog} (Iceberg's {@code Catalog} and
 * {@code SupportsNamespaces}, and the {@link io.skade.catalog.CommitFeed}, {@link
 * io.skade.catalog.ConsumerStore} and {@link io.skade.catalog.MaintenanceLocks} of its store), with
 * its property names; {@link io.skade.catalog.CatalogConnection}, which components use so that a
 * catalog in this JVM and one behind a skade server look alike; {@link
 * io.skade.catalog.SharedCatalogs}; {@link io.skade.catalog.CatalogService}, the hook of modules
 * above; and the records and exceptions these hand out ({@link io.skade.catalog.CommitEvent},
 * {@link io.skade.catalog.ConsumerCursor}, ...).
 *
 * <p><b>How it is built</b>, from the bottom:
 *
 * <ul>
 *   <li>{@code CatalogStore}: the RocksDB layout (column families, keys, the one synced write);
 *       {@code StoreRecords}: the byte encodings of its values; {@code TableKeys}: names, their
 *       validation and their injective keys.
 *   <li>{@code Committer}: the one commit path — every change to the store is a mutation it runs on
 *       its thread, in groups written by one batch and one fsync; it publishes the commit feed.
 *   <li>{@code SharedStore}: one open store (store, committer, services) per directory in a JVM,
 *       shared by every catalog opened on it.
 *   <li>{@code CatalogConfig}: a catalog's properties, read and checked once before anything opens.
 *   <li>{@code SkadeCatalog} handles names, namespaces and listing, as Iceberg's catalogs do, and
 *       hands the rest to its parts: {@code SkadeTableOperations} (one table's refresh and
 *       compare-and-swap commit; what happens on commit), {@code MultiTableCommit}, {@code
 *       CatalogConsumers}, {@code CatalogLocks}, {@code IdempotencyKeys}; {@code ExpiryGuard} and
 *       {@code FlinkCheckpointGuard} refuse commits on the commit path.
 * </ul>
 *
 * <p>The client side of a skade server (the REST client of skade's own routes, the remote commit
 * feed, the wire protocol) is {@link io.skade.catalog.remote}.
 */
package io.skade.catalog;
