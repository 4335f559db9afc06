package io.skade.source;

import org.apache.flink.api.connector.source.SourceEvent;

/**
 * The enumerator's word to a reader that holds every split it will be given of the commits up to
 * the catalog's commit stamped {@code commitMicros}: any split that reaches it later is of a later
 * commit, stamped no earlier, so with commit-time watermarks the reader's watermark may pass every
 * time before that stamp once its held splits are read, even if it is given no split at all.
 */
public record CommitProgressEvent(long commitMicros) implements SourceEvent {}
