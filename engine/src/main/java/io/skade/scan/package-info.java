/**
 * The scan pieces that the changelog, lookup, lineage and write engines share: parsed table
 * metadata ({@link io.skade.scan.MetadataCache}), a table's live data and delete files at a
 * snapshot ({@link io.skade.scan.WindowFiles}, narrowed by a {@link io.skade.scan.PartitionFilter}
 * and a {@link io.skade.scan.FileSlice}) and the rows of one file scan task ({@link
 * io.skade.scan.DataFileRows}). It depends on no other engine package and on no Flink type.
 */
package io.skade.scan;
