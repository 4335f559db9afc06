package io.skade.catalog;

/**
 * A catalog was opened where none exists by a process that may not create one (a Flink task): the
 * path is on another machine than the catalog, or the catalog was never made. Nothing was created.
 */
public class CatalogMissingException extends IllegalStateException {
  CatalogMissingException(String path) {
    super(
        "no skade catalog at "
            + path
            + " (catalog.path), and a Flink task never creates one:"
            + " a second, empty catalog would split the data. If the catalog lives on another"
            + " machine, run it as a skade server there and give the tables and catalogs"
            + " 'uri'='http://<server>:8181' instead of a local warehouse; if it was never made,"
            + " create it first from its owner (CREATE CATALOG in a SQL session, an application,"
            + " or the server)");
  }
}
