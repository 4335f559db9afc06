package io.skade.source.split;

/** A reader's mutable progress in one split: how many of its changes were emitted. */
public final class ChangelogSplitState {
  private final ChangelogSplit split;
  private long emitted;

  public ChangelogSplitState(ChangelogSplit split) {
    this.split = split;
    this.emitted = split.emitted();
  }

  public ChangelogSplit split() {
    return split;
  }

  /** Records that the split's first {@code count} changes are emitted. */
  public void emitted(long count) {
    this.emitted = count;
  }

  /** The split as it goes into a checkpoint: a restore resumes after what was emitted. */
  public ChangelogSplit toSplit() {
    return split.withEmitted(emitted);
  }
}
