package io.skade.source.database.enumerator;

import io.skade.source.database.split.CommitSplit;
import java.util.List;

/**
 * What a database source's checkpoint holds: the {@code commit_seq} whose changes, and all before
 * it, the checkpoint covers, but for {@code givenBack}: splits up to it that a reader which failed
 * alone gave back and that were not given out again yet. Its readers hold nothing: every checkpoint
 * falls on this boundary.
 */
public record DatabaseEnumeratorState(long commitSeq, List<CommitSplit> givenBack) {
  public DatabaseEnumeratorState {
    givenBack = List.copyOf(givenBack);
  }
}
