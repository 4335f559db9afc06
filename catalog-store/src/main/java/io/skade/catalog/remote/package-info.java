/**
 * The client side of a skade server, for a process that does not own the catalog: {@link
 * io.skade.catalog.remote.RemoteConnection} (the {@link io.skade.catalog.CatalogConnection} that
 * {@code CatalogConnection.open} makes when the properties set {@code uri}), {@link
 * io.skade.catalog.remote.SkadeServerClient} (skade's own routes: consumer cursors, table locks,
 * the commit log, lineage job runs), {@link io.skade.catalog.remote.RemoteCommitFeed} (the commit
 * feed over the server's long-poll) and {@link io.skade.catalog.remote.SkadeProtocol} (the paths
 * and JSON of those routes, shared with the server, which serves them). The tables themselves are
 * reached with Iceberg's own {@code RESTCatalog}, which the connection hands out wrapped. Every
 * call to the server rides one retry policy, {@link io.skade.catalog.remote.RemoteRetry}, applied
 * by these classes themselves; its Javadoc describes the whole stack and which deadline wins.
 */
package io.skade.catalog.remote;
