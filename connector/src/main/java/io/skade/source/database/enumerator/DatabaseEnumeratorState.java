package io.skade.source.database.enumerator;

/**
 * What a database source's checkpoint holds: the {@code commit_seq} whose changes, and all before
 * it, the checkpoint covers. Its readers hold nothing: every checkpoint falls on this boundary.
 */
public record DatabaseEnumeratorState(long commitSeq) {}
